import Testing

@testable import LatchkeyPersistence

@Suite struct SQLScriptTests {
    @Test func splitsOnSemicolonsOutsideQuotesAndBodies() {
        let script = """
            -- a comment; with a semicolon
            CREATE TABLE a (x text DEFAULT 'semi;colon');
            /* block; comment */
            DO $$ BEGIN PERFORM 1; PERFORM 2; END $$;
            CREATE FUNCTION f() RETURNS text LANGUAGE sql AS $body$ SELECT 'a;b' $body$;
            SELECT "odd;name" FROM a;
            """
        let statements = SQLScript.statements(in: script)
        #expect(statements.count == 4)
        #expect(statements[0] == "CREATE TABLE a (x text DEFAULT 'semi;colon')")
        #expect(statements[1] == "DO $$ BEGIN PERFORM 1; PERFORM 2; END $$")
        #expect(statements[2].hasSuffix("$body$ SELECT 'a;b' $body$"))
        #expect(statements[3] == "SELECT \"odd;name\" FROM a")
    }

    @Test func doubledQuotesStayInsideTheString() {
        #expect(SQLScript.statements(in: "SELECT 'it''s; fine'; SELECT 2") == ["SELECT 'it''s; fine'", "SELECT 2"])
    }

    @Test func positionalParametersAreNotDollarQuotes() {
        #expect(SQLScript.statements(in: "SELECT $1; SELECT 2") == ["SELECT $1", "SELECT 2"])
    }
}
