import BenchmarkSupport
import Logging

extension Bench {
    static var logger: Logger { makeLogger("gateway-bench") }
}
