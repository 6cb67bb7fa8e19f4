import Foundation

/// RFC 3339 timestamps as Latchkey writes them: UTC, `Z`, six fractional digits.
///
/// Hand-written rather than a formatter so the output is identical on every platform and
/// thread, and microseconds match what PostgreSQL `timestamptz` keeps: a date that went
/// through Postgres, an event and back compares equal.
public enum RFC3339Timestamp {
    /// Formats `date` as e.g. `2025-01-31T09:26:03.123456Z`.
    public static func string(from date: Date) -> String {
        let micros = microseconds(of: date)
        let (seconds, fraction) = floorDivide(micros, 1_000_000)
        let (days, secondOfDay) = floorDivide(seconds, 86_400)
        let (year, month, day) = civilDate(fromDaysSinceEpoch: days)
        if (0...9999).contains(year) {
            // Fixed width: written digit by digit (every event carries a few of these).
            return String(unsafeUninitializedCapacity: 27) { buffer in
                var index = 0
                func put(_ value: Int, _ width: Int) {
                    var value = value
                    for offset in stride(from: width - 1, through: 0, by: -1) {
                        buffer[index + offset] = UInt8(ascii: "0") + UInt8(value % 10)
                        value /= 10
                    }
                    index += width
                }
                func put(_ byte: Unicode.Scalar) {
                    buffer[index] = UInt8(ascii: byte)
                    index += 1
                }
                put(year, 4)
                put("-")
                put(month, 2)
                put("-")
                put(day, 2)
                put("T")
                put(secondOfDay / 3600, 2)
                put(":")
                put(secondOfDay % 3600 / 60, 2)
                put(":")
                put(secondOfDay % 60, 2)
                put(".")
                put(Int(fraction), 6)
                put("Z")
                return index
            }
        }
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2)
            + "T" + pad(secondOfDay / 3600, 2) + ":" + pad(secondOfDay % 3600 / 60, 2) + ":"
            + pad(secondOfDay % 60, 2) + "." + pad(fraction, 6) + "Z"
    }

    /// Parses any RFC 3339 `date-time` (`Z` or a numeric offset, zero or more fractional digits,
    /// `T`/`t` separator). Digits beyond microseconds are dropped; `nil` when malformed.
    public static func date(from string: String) -> Date? {
        let bytes = Array(string.utf8)
        var index = 0

        func digits(_ count: Int) -> Int? {
            guard index + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[index..<index + count] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            index += count
            return value
        }
        func expect(_ allowed: Set<UInt8>) -> Bool {
            guard index < bytes.count, allowed.contains(bytes[index]) else { return false }
            index += 1
            return true
        }

        guard let year = digits(4), expect([0x2D]), let month = digits(2), expect([0x2D]),
            let day = digits(2), expect([0x54, 0x74]),
            let hour = digits(2), expect([0x3A]), let minute = digits(2), expect([0x3A]),
            let second = digits(2)
        else { return nil }

        var micros = 0
        if index < bytes.count, bytes[index] == 0x2E {
            index += 1
            var count = 0
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                if count < 6 { micros = micros * 10 + Int(bytes[index] - 0x30) }
                count += 1
                index += 1
            }
            guard count > 0 else { return nil }
            for _ in min(count, 6)..<6 { micros *= 10 }
        }

        var offsetSeconds = 0
        guard index < bytes.count else { return nil }
        if bytes[index] == 0x5A || bytes[index] == 0x7A {
            index += 1
        } else {
            guard let sign = bytes[index] == 0x2B ? 1 : (bytes[index] == 0x2D ? -1 : nil) else { return nil }
            index += 1
            guard let offsetHour = digits(2), expect([0x3A]), let offsetMinute = digits(2),
                offsetHour < 24, offsetMinute < 60
            else { return nil }
            offsetSeconds = sign * (offsetHour * 3600 + offsetMinute * 60)
        }
        guard index == bytes.count else { return nil }

        // Leap second 60 is accepted by RFC 3339; it folds into the next second like POSIX time.
        guard (1...12).contains(month), (1...daysInMonth(year: year, month: month)).contains(day),
            hour < 24, minute < 60, second <= 60
        else { return nil }

        let days = daysSinceEpoch(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return date(microsecondsSinceEpoch: Int64(seconds) * 1_000_000 + Int64(micros))
    }

    /// `date` rounded to whole microseconds, the precision of every timestamp Latchkey stores.
    public static func normalized(_ date: Date) -> Date {
        Self.date(microsecondsSinceEpoch: microseconds(of: date))
    }

    static func microseconds(of date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
    }

    // Both parsing and normalizing build the Date the same way, so their results compare equal.
    static func date(microsecondsSinceEpoch micros: Int64) -> Date {
        Date(timeIntervalSince1970: Double(micros) / 1_000_000)
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int) {
        let quotient = value >= 0 ? value / divisor : -((-value + divisor - 1) / divisor)
        return (quotient, Int(value - quotient * divisor))
    }

    private static func pad(_ value: some BinaryInteger, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }

    private static func isLeapYear(_ year: Int) -> Bool {
        (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
    }

    private static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: return isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // Howard Hinnant's days-from-civil: exact for the proleptic Gregorian calendar.
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civilDate(fromDaysSinceEpoch days: Int64) -> (Int, Int, Int) {
        let z = Int(days) + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
