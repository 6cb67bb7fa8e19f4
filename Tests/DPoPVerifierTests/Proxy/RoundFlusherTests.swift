import NIOCore
import NIOEmbedded
import Testing

@testable import DPoPVerifier

/// Writes made during one round of the event loop leave when the round ends, all of them, each channel
/// flushed once; a flush that leads to another write in the same pass is flushed in that pass too.
@Suite struct RoundFlusherTests {
    final class Target: RoundFlushable {
        let channel: EmbeddedChannel
        var flushes = 0
        var whenFlushed: (() -> Void)?

        init(loop: EmbeddedEventLoop) {
            channel = EmbeddedChannel(loop: loop)
        }

        func flushWritten() {
            flushes += 1
            channel.flush()
            whenFlushed?()
        }

        func write(_ text: String) {
            channel.write(ByteBuffer(string: text), promise: nil)
        }

        func sent() throws -> [String] {
            var texts: [String] = []
            while let buffer = try channel.readOutbound(as: ByteBuffer.self) { texts.append(String(buffer: buffer)) }
            return texts
        }
    }

    @Test func writesOfOneRoundLeaveWhenTheRoundEnds() throws {
        let loop = EmbeddedEventLoop()
        let flusher = RoundFlusher(eventLoop: loop)
        let targets = (0..<3).map { _ in Target(loop: loop) }
        for (index, target) in targets.enumerated() {
            target.write("request \(index)")
            flusher.flushSoon(target)
        }
        for target in targets { #expect(try target.sent().isEmpty) }

        loop.run()
        for (index, target) in targets.enumerated() {
            #expect(try target.sent() == ["request \(index)"])
            #expect(target.flushes == 1)
        }

        // The next round is flushed at its own end.
        targets[1].write("again")
        flusher.flushSoon(targets[1])
        #expect(try targets[1].sent().isEmpty)
        loop.run()
        #expect(try targets[1].sent() == ["again"])
        #expect(targets.map(\.flushes) == [1, 2, 1])
    }

    @Test func aWriteCausedByAFlushLeavesInTheSamePass() throws {
        let loop = EmbeddedEventLoop()
        let flusher = RoundFlusher(eventLoop: loop)
        let first = Target(loop: loop)
        let second = Target(loop: loop)
        first.whenFlushed = {
            first.whenFlushed = nil
            second.write("next exchange")
            flusher.flushSoon(second)
        }
        first.write("request")
        flusher.flushSoon(first)

        loop.run()
        #expect(try first.sent() == ["request"])
        #expect(try second.sent() == ["next exchange"])
        #expect(second.flushes == 1)
    }
}
