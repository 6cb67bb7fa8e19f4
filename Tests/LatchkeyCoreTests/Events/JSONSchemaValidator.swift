import Foundation
import LatchkeyTestSupport

/// Validates JSON instances against JSON Schema files with Python's `jsonschema` (4.x), the
/// reference implementation, so the schemas are checked by something other than our own code.
///
/// All instances of one call go to a single `python3` process (importing jsonschema costs about
/// a tenth of a second). The interpreter is `python3` from `PATH`, or `LATCHKEY_PYTHON` if set.
enum JSONSchemaValidator {
    /// python3 or its jsonschema package is missing: the test must fail, saying how to fix it.
    struct Unavailable: Error, CustomStringConvertible {
        var description: String
    }

    struct Case {
        var schema: URL
        var instance: Data
    }

    private static let script = #"""
        import json, sys
        try:
            import importlib.metadata
            import jsonschema
            from jsonschema.validators import validator_for
            version = importlib.metadata.version("jsonschema")
            if int(version.split(".")[0]) < 4:
                raise ImportError("jsonschema %s is too old, 4.x is needed for draft 2020-12" % version)
        except Exception as exc:
            json.dump({"unavailable": "%s: %s" % (type(exc).__name__, exc)}, sys.stdout)
            sys.exit(3)
        results = []
        for case in json.load(sys.stdin):
            with open(case["schema"], encoding="utf-8") as handle:
                schema = json.load(handle)
            cls = validator_for(schema)
            if cls is not jsonschema.Draft202012Validator:
                results.append(["schema does not declare draft 2020-12"])
                continue
            cls.check_schema(schema)
            checker = getattr(cls, "FORMAT_CHECKER", None) or jsonschema.FormatChecker()
            validator = cls(schema, format_checker=checker)
            errors = sorted(
                "%s: %s" % ("/".join(str(p) for p in error.absolute_path) or "(root)", error.message)
                for error in validator.iter_errors(case["instance"]))
            results.append(errors)
        json.dump({"results": results}, sys.stdout)
        """#

    /// The validation errors of each case, in order; an empty list means valid.
    static func validate(_ cases: [Case]) throws -> [[String]] {
        // Instances are spliced in as raw bytes so the validator sees exactly what was encoded.
        var input = Data("[".utf8)
        for (index, item) in cases.enumerated() {
            if index > 0 { input.append(Data(",".utf8)) }
            input.append(Data(#"{"schema":"#.utf8))
            input.append(try JSONEncoder().encode(item.schema.path))
            input.append(Data(#","instance":"#.utf8))
            input.append(item.instance)
            input.append(Data("}".utf8))
        }
        input.append(Data("]".utf8))

        let (status, output, errorOutput) = try runPython(input: input)
        let reply = try? JSONSerialization.jsonObject(with: output) as? [String: Any]
        if let reason = reply?["unavailable"] as? String {
            throw Unavailable(
                description: "python3 cannot use the jsonschema package (\(reason)). "
                    + "Install it for the python3 on PATH: python3 -m pip install 'jsonschema>=4,<5' "
                    + "(or apt-get install python3-jsonschema), or point LATCHKEY_PYTHON at an interpreter that has it."
            )
        }
        guard status == 0, let results = reply?["results"] as? [[String]], results.count == cases.count else {
            throw Unavailable(
                description: "the jsonschema validator failed (exit \(status)): "
                    + String(decoding: errorOutput + output, as: UTF8.self))
        }
        return results
    }

    private static func runPython(input: Data) throws -> (Int32, Data, Data) {
        let interpreter = ProcessInfo.processInfo.environment["LATCHKEY_PYTHON"] ?? "python3"
        let inputPath = FileManager.default.temporaryDirectory.appendingPathComponent(
            "latchkey-schema-\(UUID().uuidString).json"
        ).path
        try input.write(to: URL(fileURLWithPath: inputPath))
        defer { unlink(inputPath) }
        let child: ChildProcess
        do {
            child = try ChildProcess(
                executable: "/usr/bin/env", arguments: [interpreter, "-c", script],
                environment: ProcessInfo.processInfo.environment, stdinPath: inputPath)
        } catch {
            throw Unavailable(description: "could not start \(interpreter) through /usr/bin/env: \(error)")
        }
        let status = child.waitBlocking()
        // stdout and stderr share one file: the JSON reply is its last line, anything before it is a diagnostic.
        let output = child.output()
        let lastLine = output.split(separator: "\n").last.map(String.init) ?? ""
        return (status, Data(lastLine.utf8), Data(output.utf8))
    }
}
