extension UInt8 {
    /// `0-9`, `a-f` or `A-F`: the digits of percent-encoding, UUIDs and hex digests.
    public var isASCIIHexDigit: Bool {
        switch self {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
            UInt8(ascii: "A")...UInt8(ascii: "F"):
            return true
        default:
            return false
        }
    }
}
