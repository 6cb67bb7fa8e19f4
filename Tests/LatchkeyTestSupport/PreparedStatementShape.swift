import PostgresNIO

/// The parameters a prepared statement's SQL uses ($1 … $n) against the types it declares. A prepared
/// statement is parsed once per connection: a parameter whose type is left to PostgreSQL is fixed by the
/// first call's values (a NULL leaves it to be inferred from the SQL), and a later value of another type
/// is refused. So every parameter's type is declared, in order.
public enum PreparedStatementShape {
    /// The highest `$n` in `sql`.
    public static func parameterCount(_ sql: String) -> Int {
        var highest = 0
        var digits = ""
        var afterDollar = false
        for character in sql + " " {
            if afterDollar, character.isASCII, character.isNumber {
                digits.append(character)
                continue
            }
            if let number = Int(digits) { highest = max(highest, number) }
            digits = ""
            afterDollar = character == "$"
        }
        return highest
    }

    /// Whether `Statement` declares one type per parameter its SQL uses.
    public static func declaresEveryParameter<Statement: PostgresPreparedStatement>(_: Statement.Type) -> Bool {
        Statement.bindingDataTypes.count == parameterCount(Statement.sql)
    }
}
