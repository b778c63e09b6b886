#include "statemachine/sql/parser.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

namespace raftlock::statemachine::sql {
namespace {

const ParseLimits kDefaults{};

struct Case {
    std::string_view query;
    std::string_view expected;  // to_string of the one statement
};

struct ErrorCase {
    std::string_view query;
    std::string_view sqlstate;
    std::string_view message;
    uint32_t pos;
};

// The text forms of every statement of `query`, which must parse.
std::vector<std::string> parse_all(std::string_view query, const ParseLimits& limits = kDefaults) {
    auto result = parse(query, limits);
    if (!result.ok()) {
        FAIL_CHECK("error " << result.error().sqlstate << " at " << result.error().pos << ": "
                            << result.error().message);
        return {};
    }
    std::vector<std::string> texts;
    for (const ParsedStatement& s : *result) {
        texts.push_back(to_string(s.statement));
    }
    return texts;
}

void check_cases(const std::vector<Case>& cases) {
    for (const Case& c : cases) {
        CAPTURE(c.query);
        CHECK(parse_all(c.query) == std::vector<std::string>{std::string(c.expected)});
    }
}

SyntaxError parse_error(std::string_view query, const ParseLimits& limits = kDefaults) {
    auto result = parse(query, limits);
    REQUIRE_FALSE(result.ok());
    return result.error();
}

void check_errors(const std::vector<ErrorCase>& cases, const ParseLimits& limits = kDefaults) {
    for (const ErrorCase& c : cases) {
        CAPTURE(c.query);
        const SyntaxError e = parse_error(c.query, limits);
        CHECK(e.sqlstate == c.sqlstate);
        CHECK(e.message == c.message);
        CHECK(e.pos == c.pos);
    }
}

// --- statements that parse ---------------------------------------------------------------------

TEST_CASE("the statements client libraries send on their own parse", "[sql][parser]") {
    check_cases({
        {"SET DateStyle = 'ISO'", R"(set datestyle="ISO")"},
        {"SET client_encoding TO 'UTF8'", R"(set client_encoding="UTF8")"},
        {"SHOW transaction_isolation", "show transaction_isolation"},
        {"BEGIN", "begin"},
        {"SELECT 1", R"(select items=[lit int4 1] from="")"},
        {"SELECT now()", R"(select items=[fn now()] from="")"},
        {"SELECT version()", R"(select items=[fn version()] from="")"},
        {"select pg_catalog.version()", R"(select items=[fn version()] from="")"},
        {"SET extra_float_digits = 3", R"(set extra_float_digits="3")"},
        {"SET application_name = 'PostgreSQL JDBC Driver'",
         R"(set application_name="PostgreSQL JDBC Driver")"},
        {"show standard_conforming_strings", "show standard_conforming_strings"},
        {"SHOW TRANSACTION ISOLATION LEVEL", "show transaction_isolation"},
        {"select current_schema()", R"(select items=[fn current_schema()] from="")"},
    });
}

TEST_CASE("the lock-table techniques and the advisory lock functions parse", "[sql][parser]") {
    check_cases({
        {"INSERT INTO locks (name, owner) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING name",
         "insert into locks columns=[name, owner] values=[[$1, $2]] on conflict do nothing "
         "returning [col name]"},
        {"SELECT * FROM accounts WHERE id = 1 FOR UPDATE",
         "select items=[*] from=accounts where (col id = lit int4 1) for update"},
        {"UPDATE items SET value = $1, version = version + 1 WHERE id = $2 AND version = $3",
         "update items set [value=$1, version=(col version + lit int4 1)] where ((col id = $2) AND "
         "(col version = $3))"},
        {"UPDATE t SET version = version + 1 WHERE name = $1",
         "update t set [version=(col version + lit int4 1)] where (col name = $1)"},
        {"SELECT pg_advisory_lock(1)", R"(select items=[fn pg_advisory_lock(lit int4 1)] from="")"},
        {"SELECT pg_advisory_lock(1, 2)",
         R"(select items=[fn pg_advisory_lock(lit int4 1, lit int4 2)] from="")"},
        {"SELECT GET_LOCK('x', 10)",
         R"(select items=[fn get_lock(lit unknown "x", lit int4 10)] from="")"},
        {"SELECT pg_try_advisory_xact_lock($1)",
         R"(select items=[fn pg_try_advisory_xact_lock($1)] from="")"},
        {"select pg_advisory_unlock_all()",
         R"(select items=[fn pg_advisory_unlock_all()] from="")"},
        {"CREATE TABLE locks (name text PRIMARY KEY, owner text, version bigint NOT NULL DEFAULT "
         "0, "
         "expires_at timestamptz)",
         "create table locks [name text primary key, owner text, version int8 not null default lit "
         "int4 0, expires_at timestamptz]"},
        {"DELETE FROM locks WHERE name = $1 AND owner = $2 RETURNING name",
         "delete from locks where ((col name = $1) AND (col owner = $2)) returning [col name]"},
        {"SELECT * FROM jobs WHERE state = 'ready' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED",
         R"(select items=[*] from=jobs where (col state = lit unknown "ready") )"
         R"(order by [col id asc] limit lit int4 1 for update skip locked)"},
    });
}

TEST_CASE("SELECT parses every clause of the subset", "[sql][parser]") {
    check_cases({
        {"select name, owner as o, version v from locks where name = $1 and expires_at > now() "
         "order by name desc, owner limit 10",
         "select items=[col name, col owner as o, col version as v] from=locks where ((col name = "
         "$1) AND (col expires_at > fn now())) order by [col name desc, col owner asc] limit lit "
         "int4 10"},
        {"SELECT count(*) FROM locks", "select items=[fn count(*)] from=locks"},
        {"SELECT * FROM t FOR SHARE NOWAIT", "select items=[*] from=t for share nowait"},
        {"SELECT * FROM t FOR UPDATE NOWAIT", "select items=[*] from=t for update nowait"},
        {"SELECT * FROM t FOR UPDATE LIMIT $1", "select items=[*] from=t limit $1 for update"},
        {"SELECT 1 LIMIT ALL", R"(select items=[lit int4 1] from="")"},
        {"SELECT ALL 1", R"(select items=[lit int4 1] from="")"},
        {"SELECT * FROM ONLY t", "select items=[*] from=t"},
        {"SELECT t.a FROM public.t", "select items=[col t.a] from=t"},
        {"SELECT public.t.a FROM t", "select items=[col t.a] from=t"},
        {"SELECT t.select FROM t", "select items=[col t.select] from=t"},
        {R"(SELECT "Name", "a""b" AS "X Y" FROM "Locks")",
         R"(select items=[col "Name", col "a\"b" as "X Y"] from="Locks")"},
        {"SELECT 1 AS from, 2 AS \"select\"",
         R"(select items=[lit int4 1 as from, lit int4 2 as select] from="")"},
        {"SELECT a x$1 FROM t", "select items=[col a as x$1] from=t"},
        {"SELECT name, value, version, key, owner, int, timestamp FROM t",
         "select items=[col name, col value, col version, col key, col owner, col int, col "
         "timestamp] from=t"},
        {"SELECT CURRENT_TIMESTAMP, current_timestamp AS ts",
         R"(select items=[fn now() as current_timestamp, fn now() as ts] from="")"},
        {"SELECT coalesce(a, 0) FROM t", "select items=[fn coalesce(col a, lit int4 0)] from=t"},
        {"SELECT * FROM t WHERE NOT_A = 1",
         "select items=[*] from=t where (col not_a = lit int4 1)"},
    });
}

TEST_CASE("expressions follow PostgreSQL's precedence", "[sql][parser]") {
    check_cases({
        {"SELECT a = b IS NULL", R"(select items=[((col a = col b) IS NULL)] from="")"},
        {"SELECT a + 1 = b - 2 AND c",
         R"(select items=[(((col a + lit int4 1) = (col b - lit int4 2)) AND col c)] from="")"},
        {"SELECT 1 - 2 - 3", R"(select items=[((lit int4 1 - lit int4 2) - lit int4 3)] from="")"},
        {"SELECT a AND b AND c", R"(select items=[((col a AND col b) AND col c)] from="")"},
        {"SELECT x::text = 'a'", R"(select items=[((col x::text) = lit unknown "a")] from="")"},
        {"SELECT -1::int", R"(select items=[(- (lit int4 1::int4))] from="")"},
        {"SELECT -a", R"(select items=[(- col a)] from="")"},
        {"SELECT - -a", R"(select items=[(- (- col a))] from="")"},
        {"SELECT (1 + 2) - 3",
         R"(select items=[((lit int4 1 + lit int4 2) - lit int4 3)] from="")"},
        {"SELECT 1 + (2 - 3)",
         R"(select items=[(lit int4 1 + (lit int4 2 - lit int4 3))] from="")"},
        {"SELECT a IS NULL, b IS NOT NULL, c ISNULL, d NOTNULL FROM t",
         "select items=[(col a IS NULL), (col b IS NOT NULL), (col c IS NULL), (col d IS NOT "
         "NULL)] from=t"},
        {"SELECT a IS NULL IS NULL", R"(select items=[((col a IS NULL) IS NULL)] from="")"},
        {"SELECT a IS NULL AND b = 1",
         R"(select items=[((col a IS NULL) AND (col b = lit int4 1))] from="")"},
        {"SELECT a<>b, a!=b, a<=b, a>=b, a<b, a>b",
         R"(select items=[(col a <> col b), (col a <> col b), (col a <= col b), )"
         R"((col a >= col b), (col a < col b), (col a > col b)] from="")"},
        {"SELECT a=-1", R"(select items=[(col a = lit int4 -1)] from="")"},
        {"SELECT a-1", R"(select items=[(col a - lit int4 1)] from="")"},
        {"SELECT a--1\n", R"(select items=[col a] from="")"},
        {"SELECT TRUE, FALSE, NULL",
         R"(select items=[lit bool true, lit bool false, lit null] from="")"},
    });
}

TEST_CASE("integer constants are int4 or int8 by value, with minus signs folded in",
          "[sql][parser]") {
    check_cases({
        {"SELECT -5, - 5, - - 3, -(5)",
         R"(select items=[lit int4 -5, lit int4 -5, lit int4 3, (- lit int4 5)] from="")"},
        {"SELECT 2147483647, 2147483648, -2147483648, -2147483649",
         R"(select items=[lit int4 2147483647, lit int8 2147483648, lit int4 -2147483648, )"
         R"(lit int8 -2147483649] from="")"},
        {"SELECT 9223372036854775807, -9223372036854775808",
         R"(select items=[lit int8 9223372036854775807, lit int8 -9223372036854775808] from="")"},
        {"SELECT 1_000, 007", R"(select items=[lit int4 1000, lit int4 7] from="")"},
    });
}

TEST_CASE("casts and typed constants map to the subset's types", "[sql][parser]") {
    check_cases({
        {"SELECT '5'::bigint, CAST($1 AS text), timestamptz '2026-01-01'",
         R"(select items=[(lit unknown "5"::int8), ($1::text), )"
         R"((lit unknown "2026-01-01"::timestamptz)] from="")"},
        {"SELECT timestamp with time zone '2026-01-01 00:00:00+00', '1'::varchar, int '7'",
         R"(select items=[(lit unknown "2026-01-01 00:00:00+00"::timestamptz), )"
         R"((lit unknown "1"::text), (lit unknown "7"::int4)] from="")"},
        {"SELECT 't'::bool::boolean, 1::int8::integer::int4",
         R"(select items=[((lit unknown "t"::bool)::bool), )"
         R"((((lit int4 1::int8)::int4)::int4)] from="")"},
        {"SELECT a::character varying, a::pg_catalog.text, a::\"timestamptz\"",
         R"(select items=[(col a::text), (col a::text), (col a::timestamptz)] from="")"},
    });
}

TEST_CASE("string constants follow PostgreSQL's quoting", "[sql][parser]") {
    check_cases({
        {"SELECT 'it''s'", R"(select items=[lit unknown "it's"] from="")"},
        {"SELECT ''", R"(select items=[lit unknown ""] from="")"},
        {"SELECT 'a'\n  'b' -- c\n'c'", R"(select items=[lit unknown "abc"] from="")"},
        {"SELECT 'a\\b\"'", R"(select items=[lit unknown "a\\b\""] from="")"},
        {"SELECT 'tab\there'", R"(select items=[lit unknown "tab\x09here"] from="")"},
        {"SELECT '\xc3\xa9t\xc3\xa9'",
         "select items=[lit unknown \"\xc3\xa9t\xc3\xa9\"] from=\"\""},
    });
}

TEST_CASE("comments and case are ignored where PostgreSQL ignores them", "[sql][parser]") {
    check_cases({
        {"/* a /* nested */ comment */ SeLeCt -- trailing\n 1",
         R"(select items=[lit int4 1] from="")"},
        {"select/**/1", R"(select items=[lit int4 1] from="")"},
        {"SELECT Foo FROM Bar", "select items=[col foo] from=bar"},
        {"SELECT 1 /* end */", R"(select items=[lit int4 1] from="")"},
    });
}

TEST_CASE("INSERT, UPDATE and DELETE parse every clause of the subset", "[sql][parser]") {
    check_cases({
        {"INSERT INTO t VALUES (1, 'a'), (2, NULL)",
         R"(insert into t values=[[lit int4 1, lit unknown "a"], [lit int4 2, lit null]])"},
        {"insert into public.t (a) values (now()) returning *",
         "insert into t columns=[a] values=[[fn now()]] returning [*]"},
        {"INSERT INTO t (a, b) VALUES ($1, $2) RETURNING a AS x, b",
         "insert into t columns=[a, b] values=[[$1, $2]] returning [col a as x, col b]"},
        {"UPDATE ONLY t SET a = 1 RETURNING a, b",
         "update t set [a=lit int4 1] returning [col a, col b]"},
        {"UPDATE t SET flag = a = b", "update t set [flag=(col a = col b)]"},
        {"DELETE FROM t", "delete from t"},
        {"DELETE FROM ONLY public.t WHERE a IS NOT NULL RETURNING *",
         "delete from t where (col a IS NOT NULL) returning [*]"},
    });
}

TEST_CASE("CREATE TABLE and DROP TABLE parse every column form", "[sql][parser]") {
    check_cases({
        {"create table if not exists t (a varchar(20) unique, b character varying(5) null, c "
         "int, d integer, e int4, f int8, g boolean, h bool, i timestamp with time zone default "
         "now(), j text default 'x', k bigint default -1, l timestamptz default "
         "'2026-01-01'::timestamptz, m varchar, n char varying(3))",
         "create table if not exists t [a varchar(20) unique, b varchar(5), c int4, d int4, e "
         "int4, f int8, g bool, h bool, i timestamptz default fn now(), j text default lit unknown "
         "\"x\", k int8 default lit int4 -1, l timestamptz default (lit unknown "
         "\"2026-01-01\"::timestamptz), m text, n varchar(3)]"},
        {"CREATE TABLE t (a int NOT NULL PRIMARY KEY, b int DEFAULT NULL NOT NULL)",
         "create table t [a int4 primary key not null, b int4 not null default lit null]"},
        {"CREATE TABLE t (a timestamptz DEFAULT CURRENT_TIMESTAMP)",
         "create table t [a timestamptz default fn now()]"},
        {"CREATE TABLE public.\"T\" (\"A\" text)", R"(create table "T" ["A" text])"},
        {"DROP TABLE t", "drop table t"},
        {"DROP TABLE IF EXISTS public.t CASCADE", "drop table if exists t"},
        {"drop table t restrict", "drop table t"},
    });
}

TEST_CASE("transaction statements parse in all their spellings", "[sql][parser]") {
    check_cases({
        {"BEGIN WORK", "begin"},
        {"BEGIN TRANSACTION", "begin"},
        {"BEGIN ISOLATION LEVEL READ COMMITTED", "begin"},
        {"BEGIN TRANSACTION ISOLATION LEVEL READ COMMITTED, READ WRITE", "begin"},
        {"begin read write isolation level read committed", "begin"},
        {"START TRANSACTION", "begin"},
        {"START TRANSACTION READ WRITE", "begin"},
        {"COMMIT", "commit"},
        {"COMMIT WORK", "commit"},
        {"END", "commit"},
        {"END TRANSACTION", "commit"},
        {"COMMIT AND NO CHAIN", "commit"},
        {"ROLLBACK", "rollback"},
        {"ROLLBACK TRANSACTION", "rollback"},
        {"ABORT", "rollback"},
        {"ABORT WORK", "rollback"},
    });
}

TEST_CASE("SET, RESET and SHOW parse their values and special names", "[sql][parser]") {
    check_cases({
        {"SET SESSION statement_timeout = 5000", R"(set statement_timeout="5000")"},
        {"SET x = -007", R"(set x="-7")"},
        {"SET x = 99999999999", R"(set x="99999999999")"},
        {"SET x = 1.5", R"(set x="1.5")"},
        {"SET x = -1.5", R"(set x="-1.5")"},
        {"SET x TO DEFAULT", "set x=default"},
        {"SET search_path = public", R"(set search_path="public")"},
        {"SET datestyle = ISO", R"(set datestyle="iso")"},
        {"SET x = on", R"(set x="on")"},
        {"SET x = true", R"(set x="true")"},
        {"SET application_name = \"My App\"", R"(set application_name="My App")"},
        {"SET myapp.Setting = 'v'", R"(set myapp.setting="v")"},
        {"SET TIME ZONE 'UTC'", R"(set timezone="UTC")"},
        {"SET TIME ZONE LOCAL", "set timezone=default"},
        {"SET NAMES 'UTF8'", R"(set client_encoding="UTF8")"},
        {"SET SCHEMA 'public'", R"(set search_path="public")"},
        {"RESET x", "set x=default"},
        {"RESET ALL", "set all=default"},
        {"RESET TIME ZONE", "set timezone=default"},
        {"SHOW ALL", "show all"},
        {"SHOW TIME ZONE", "show timezone"},
        {"SHOW server_version", "show server_version"},
        {"SHOW SESSION AUTHORIZATION", "show session_authorization"},
    });
}

TEST_CASE("a query holds several statements, and empty ones are skipped", "[sql][parser]") {
    auto result = parse("BEGIN; SELECT $2, $5;; ;COMMIT;", kDefaults);
    REQUIRE(result.ok());
    REQUIRE(result->size() == 3);
    CHECK(to_string((*result)[0].statement) == "begin");
    CHECK(to_string((*result)[1].statement) == R"(select items=[$2, $5] from="")");
    CHECK(to_string((*result)[2].statement) == "commit");
    CHECK((*result)[0].pos == 1);
    CHECK((*result)[1].pos == 8);
    CHECK((*result)[2].pos == 25);
    CHECK((*result)[0].params_max == 0);
    CHECK((*result)[1].params_max == 5);
    CHECK((*result)[2].params_max == 0);

    for (std::string_view empty : {"", "   ", ";", " ;; ; ", "-- only a comment\n /* and */ ;"}) {
        CAPTURE(empty);
        auto r = parse(empty, kDefaults);
        REQUIRE(r.ok());
        CHECK(r->empty());
    }
}

TEST_CASE("expressions carry the character positions of their tokens", "[sql][parser]") {
    // 'é' is two bytes and one character: positions count characters, as PostgreSQL's do.
    auto result = parse("SELECT '\xc3\xa9', x = -1, f($3) FROM t", kDefaults);
    REQUIRE(result.ok());
    const auto& select = std::get<Select>((*result)[0].statement);
    REQUIRE(select.items.size() == 3);
    CHECK(select.items[0].expr->pos == 8);
    const Expr& eq = *select.items[1].expr;
    CHECK(eq.pos == 15);
    CHECK(eq.args[0]->pos == 13);
    CHECK(eq.args[1]->pos == 17);  // the folded literal starts at its minus sign
    CHECK(eq.args[1]->literal == Value::of_int4(-1));
    const Expr& f = *select.items[2].expr;
    CHECK(f.pos == 21);
    CHECK(f.args[0]->pos == 23);
    CHECK(f.args[0]->param == 3);
    CHECK((*result)[0].params_max == 3);
}

TEST_CASE("identifiers are truncated to 63 bytes, at a character boundary", "[sql][parser]") {
    const std::string long_name(70, 'a');
    CHECK(parse_all("SELECT " + long_name) ==
          std::vector<std::string>{"select items=[col " + std::string(63, 'a') + "] from=\"\""});
    // 62 ASCII bytes, then a two-byte character that would end at byte 64: it goes whole.
    // Appended in steps: GCC 12 at -O2 warns (falsely, -Warray-bounds) about the concatenation of
    // temporaries this was.
    std::string query = "SELECT \"";
    query.append(62, 'b');
    query.append(
        "\xc3\xa9"
        "c\"");
    CHECK(parse_all(query) ==
          std::vector<std::string>{"select items=[col " + std::string(62, 'b') + "] from=\"\""});
}

// --- errors ------------------------------------------------------------------------------------

TEST_CASE("syntax errors have PostgreSQL's wording and position", "[sql][parser][errors]") {
    check_errors({
        {"SELEC 1", "42601", R"(syntax error at or near "SELEC")", 1},
        {"SELECT 1 +", "42601", "syntax error at end of input", 11},
        {"SELECT 1 +   ", "42601", "syntax error at end of input", 14},
        {"SELECT 1 2", "42601", R"(syntax error at or near "2")", 10},
        {"SELECT a = b = c", "42601", R"(syntax error at or near "=")", 14},
        {"SELECT a < b > c", "42601", R"(syntax error at or near ">")", 14},
        {"SELECT 1 AS", "42601", "syntax error at end of input", 12},
        {"SELECT * FROM", "42601", "syntax error at end of input", 14},
        {"SELECT * FROM select", "42601", R"(syntax error at or near "select")", 15},
        {"SELECT * FROM t WHERE", "42601", "syntax error at end of input", 22},
        {"SELECT )", "42601", "syntax error at or near \")\"", 8},
        {"SELECT (1", "42601", "syntax error at end of input", 10},
        {"SELECT f(1,)", "42601", "syntax error at or near \")\"", 12},
        {"SELECT 'a' 'b'", "42601", R"(syntax error at or near "'b'")", 12},
        {"SELECT $", "42601", R"(syntax error at or near "$")", 8},
        {"SELECT {", "42601", R"(syntax error at or near "{")", 8},
        {"SELECT left FROM t", "42601", R"(syntax error at or near "left")", 8},
        {"SELECT a FROM t LIMIT", "42601", "syntax error at end of input", 22},
        {"SELECT * FROM t FOR", "42601", "syntax error at end of input", 20},
        {"SELECT * FROM t FOR UPDATE SKIP", "42601", "syntax error at end of input", 32},
        {"INSERT t VALUES (1)", "42601", R"(syntax error at or near "t")", 8},
        {"INSERT INTO t VALUES ()", "42601", "syntax error at or near \")\"", 23},
        {"INSERT INTO t (a VALUES (1)", "42601", R"(syntax error at or near "VALUES")", 18},
        {"UPDATE t a = 1", "0A000", "a table alias is not supported in the SQL mode", 10},
        {"UPDATE t SET a 1", "42601", R"(syntax error at or near "1")", 16},
        {"DELETE t", "42601", R"(syntax error at or near "t")", 8},
        {"CREATE TABLE t (a)", "42601", "syntax error at or near \")\"", 18},
        {"CREATE TABLE t (a int", "42601", "syntax error at end of input", 22},
        {"DROP TABLE", "42601", "syntax error at end of input", 11},
        {"BEGIN ISOLATION LEVEL", "42601", "syntax error at end of input", 22},
        {"BEGIN READ WRITE,", "42601", "syntax error at end of input", 18},
        {"SET x", "42601", "syntax error at end of input", 6},
        {"SET x = select", "42601", R"(syntax error at or near "select")", 9},
        {"SHOW", "42601", "syntax error at end of input", 5},
        {"\"select\" 1", "42601", R"(syntax error at or near ""select"")", 1},
        {"SELECT 1; SELEC 2", "42601", R"(syntax error at or near "SELEC")", 11},
        {"SELECT * FROM t ORDER BY 'a'", "42601", "non-integer constant in ORDER BY", 26},
        {"SELECT 1 FROM t LIMIT 1 LIMIT 2", "42601", "multiple LIMIT clauses not allowed", 25},
    });
}

TEST_CASE("lexical errors have PostgreSQL's wording and are reported when reached",
          "[sql][parser][errors]") {
    check_errors({
        {"SELECT 'abc", "42601", R"(unterminated quoted string at or near "'abc")", 8},
        {"SELECT 'a''", "42601", R"(unterminated quoted string at or near "'a''")", 8},
        {"SELECT 'a'\n'b", "42601", "unterminated quoted string at or near \"'a'\n'b\"", 8},
        {"SELECT \"abc", "42601", R"(unterminated quoted identifier at or near ""abc")", 8},
        {"SELECT 1 /* x /* y */", "42601", R"(unterminated /* comment at or near "/* x /* y */")",
         10},
        {"SELECT \"\"", "42601", R"(zero-length delimited identifier at or near """")", 8},
        {"SELECT 123abc", "42601", R"(trailing junk after numeric literal at or near "123abc")", 8},
        {"SELECT 1_", "42601", R"(trailing junk after numeric literal at or near "1_")", 8},
        {"SELECT 1e", "42601", R"(trailing junk after numeric literal at or near "1e")", 8},
        {"SELECT $1abc", "42601", R"(trailing junk after parameter at or near "$1abc")", 8},
        {"SELECT 1; SELECT 'abc", "42601", R"(unterminated quoted string at or near "'abc")", 18},
        // The grammar fails first: PostgreSQL never asks the scanner for the
        // string.
        {"SELEC 'abc", "42601", R"(syntax error at or near "SELEC")", 1},
        {"SELECT 1 'abc", "42601", R"(unterminated quoted string at or near "'abc")", 10},
    });
}

TEST_CASE("valid SQL outside the subset is refused as not supported, naming what",
          "[sql][parser][errors]") {
    const std::string_view n = "0A000";
    check_errors({
        {"SELECT * FROM t WHERE a = 1 OR b = 2", n, "OR is not supported in the SQL mode; use AND",
         29},
        {"SELECT * FROM t WHERE NOT a", n,
         "NOT is not supported in the SQL mode; compare with = or <>", 23},
        {"SELECT * FROM a JOIN b ON a.x = b.x", n, "JOIN is not supported in the SQL mode", 17},
        {"SELECT * FROM a LEFT JOIN b ON true", n, "JOIN is not supported in the SQL mode", 17},
        {"SELECT * FROM a, b", n, "selecting from several tables is not supported in the SQL mode",
         16},
        {"SELECT * FROM t x", n, "a table alias is not supported in the SQL mode", 17},
        {"SELECT * FROM t AS x", n, "a table alias is not supported in the SQL mode", 17},
        {"SELECT count(*) FROM t GROUP BY a", n, "GROUP BY is not supported in the SQL mode", 24},
        {"SELECT a FROM t HAVING a > 1", n, "HAVING is not supported in the SQL mode", 17},
        {"SELECT 1 UNION SELECT 2", n, "UNION is not supported in the SQL mode", 10},
        {"SELECT * FROM t OFFSET 5", n, "OFFSET is not supported in the SQL mode", 17},
        {"SELECT * FROM t LIMIT 1 OFFSET 5", n, "OFFSET is not supported in the SQL mode", 25},
        {"SELECT DISTINCT a FROM t", n, "DISTINCT is not supported in the SQL mode", 8},
        {"SELECT * FROM t WHERE a IN (1, 2)", n, "IN is not supported in the SQL mode", 25},
        {"SELECT * FROM t WHERE a NOT IN (1)", n, "NOT IN is not supported in the SQL mode", 25},
        {"SELECT * FROM t WHERE a LIKE 'x%'", n, "LIKE is not supported in the SQL mode", 25},
        {"SELECT * FROM t WHERE a BETWEEN 1 AND 2", n, "BETWEEN is not supported in the SQL mode",
         25},
        {"SELECT * FROM t WHERE a IS TRUE", n, "IS TRUE is not supported in the SQL mode", 25},
        {"SELECT * FROM t WHERE a IS NOT DISTINCT FROM b", n,
         "IS NOT DISTINCT FROM is not supported in the SQL mode", 25},
        {"SELECT (SELECT 1)", n, "a subquery is not supported in the SQL mode", 9},
        {"SELECT * FROM (SELECT 1) s", n, "a subquery in FROM is not supported in the SQL mode",
         15},
        {"SELECT EXISTS (SELECT 1)", n, "EXISTS is not supported in the SQL mode", 8},
        {"SELECT CASE WHEN a THEN 1 END", n, "CASE is not supported in the SQL mode", 8},
        {"SELECT a * 2 FROM t", n, "the operator * is not supported in the SQL mode", 10},
        {"SELECT a || 'x'", n, "the operator || is not supported in the SQL mode", 10},
        {"SELECT a / 2", n, "the operator / is not supported in the SQL mode", 10},
        {"SELECT ~1", n, "the prefix operator ~ is not supported in the SQL mode", 8},
        {"SELECT +1", n, "the unary operator + is not supported in the SQL mode", 8},
        {"SELECT a[1]", n, "an array subscript is not supported in the SQL mode", 9},
        {"SELECT (1, 2)", n, "a row constructor is not supported in the SQL mode", 10},
        {"SELECT t.* FROM t", n, "table.* is not supported in the SQL mode; use *", 10},
        {"SELECT *, 1 FROM t", n, "* together with other items is not supported in the SQL mode",
         8},
        {"SELECT 1, * FROM t", n, "* together with other items is not supported in the SQL mode",
         11},
        {"SELECT FROM t", n, "SELECT without a select list is not supported in the SQL mode", 8},
        {"SELECT", n, "SELECT without a select list is not supported in the SQL mode", 7},
        {"SELECT a INTO b FROM t", n, "SELECT INTO is not supported in the SQL mode", 10},
        {"SELECT * FROM t ORDER BY 1", n,
         "ORDER BY a select-list position is not supported in the SQL mode; order "
         "by the "
         "column's name",
         26},
        {"SELECT * FROM t ORDER BY a NULLS FIRST", n,
         "NULLS FIRST or NULLS LAST is not supported in the SQL mode", 28},
        {"SELECT * FROM t FOR UPDATE OF t", n,
         "FOR UPDATE OF or FOR SHARE OF is not supported in the SQL mode; lock "
         "the FROM table",
         28},
        {"SELECT * FROM t FOR NO KEY UPDATE", n,
         "FOR NO KEY UPDATE is not supported in the SQL mode", 17},
        {"SELECT * FROM t FOR UPDATE FOR SHARE", n,
         "more than one locking clause is not supported in the SQL mode", 28},
        {"SELECT * FROM other.t", n,
         "schema \"other\" is not supported in the SQL mode; the tables of the SQL "
         "mode are in "
         "schema \"public\"",
         15},
        {"SELECT x.f(1)", n, "a function outside pg_catalog (x.f) is not supported in the SQL mode",
         8},
        {"SELECT count(DISTINCT a) FROM t", n,
         "DISTINCT in function arguments is not supported in the SQL mode", 14},
        {"SELECT f(a => 1)", n, "a named function argument is not supported in the SQL mode", 10},
        {"SELECT count(*) OVER () FROM t", n,
         "a window function (OVER) is not supported in the SQL mode", 17},
        {"SELECT 1.5", n,
         "a numeric constant is not supported in the SQL mode; the SQL mode has no "
         "numeric type; "
         "use integers",
         8},
        {"SELECT .5e3", n,
         "a numeric constant is not supported in the SQL mode; the SQL mode has no "
         "numeric type; "
         "use integers",
         8},
        {"SELECT E'a\\n'", n,
         "E'...' string constants are not supported in the SQL mode; use standard "
         "'...' strings",
         8},
        {"SELECT X'1F'", n, "bit-string constants are not supported in the SQL mode", 8},
        {"SELECT U&'x'", n, "Unicode escapes (U&) are not supported in the SQL mode", 8},
        {"SELECT $$x$$", n, "dollar-quoted strings are not supported in the SQL mode", 8},
        {"SELECT 0x1F", n,
         "hexadecimal, octal and binary integer constants are not supported in the "
         "SQL mode",
         8},
        {"SELECT 'x'::varchar(3)", n,
         "a cast to varchar(n) is not supported in the SQL mode; cast to text", 20},
        {"SELECT 'x'::numeric", n, "type \"numeric\" is not supported in the SQL mode", 13},
        {"SELECT 'x'::int[]", n, "an array type is not supported in the SQL mode", 16},
        {"SELECT date '2026-01-01'", n, "type \"date\" is not supported in the SQL mode", 8},
        {"SELECT interval '1 day'", n, "type interval is not supported in the SQL mode", 8},
        {"SELECT CURRENT_DATE", n, "CURRENT_DATE is not supported in the SQL mode", 8},
        {"SELECT a COLLATE \"C\" FROM t", n, "COLLATE is not supported in the SQL mode", 10},
        {"SELECT a AT TIME ZONE 'UTC' FROM t", n, "AT TIME ZONE is not supported in the SQL mode",
         10},
        {"WITH x AS (SELECT 1) SELECT * FROM x", n, "WITH is not supported in the SQL mode", 1},
        {"VALUES (1)", n, "VALUES is not supported in the SQL mode", 1},
        {"(SELECT 1)", n, "a parenthesized query is not supported in the SQL mode", 1},
        {"ALTER TABLE t ADD COLUMN x int", n, "ALTER is not supported in the SQL mode", 1},
        {"TRUNCATE t", n, "TRUNCATE is not supported in the SQL mode", 1},
        {"COPY t FROM STDIN", n, "COPY is not supported in the SQL mode", 1},
        {"LOCK TABLE t", n,
         "LOCK is not supported in the SQL mode; use pg_advisory_lock() or SELECT "
         "... FOR UPDATE",
         1},
        {"CREATE INDEX i ON t (a)", n, "CREATE INDEX is not supported in the SQL mode", 1},
        {"CREATE UNIQUE INDEX i ON t (a)", n,
         "CREATE UNIQUE INDEX is not supported in the SQL mode", 1},
        {"CREATE TEMP TABLE t (a int)", n, "CREATE TEMP TABLE is not supported in the SQL mode", 1},
        {"CREATE TABLE t AS SELECT 1", n, "CREATE TABLE ... AS is not supported in the SQL mode",
         16},
        {"CREATE TABLE t ()", n, "a table without columns is not supported in the SQL mode", 17},
        {"CREATE TABLE t (a int, PRIMARY KEY (a))", n,
         "a table constraint is not supported in the SQL mode; declare PRIMARY KEY "
         "or UNIQUE on "
         "the column itself",
         24},
        {"CREATE TABLE t (a int REFERENCES u)", n,
         "REFERENCES in a column definition is not supported in the SQL mode", 23},
        {"CREATE TABLE t (a int CHECK (a > 0))", n,
         "CHECK in a column definition is not supported in the SQL mode", 23},
        {"CREATE TABLE t (a numeric)", n, "type \"numeric\" is not supported in the SQL mode", 19},
        {"CREATE TABLE t (a serial)", n, "type \"serial\" is not supported in the SQL mode", 19},
        {"CREATE TABLE t (a timestamp)", n,
         "type \"timestamp without time zone\" is not supported in the SQL mode; "
         "use timestamptz",
         19},
        {"CREATE TABLE t (a timestamptz(3))", n,
         "a timestamp precision is not supported in the SQL mode", 30},
        {"CREATE TABLE t (a int DEFAULT b)", n,
         "a DEFAULT other than a constant or now() is not supported in the SQL "
         "mode",
         31},
        {"CREATE TABLE t (a int DEFAULT random())", n,
         "a DEFAULT other than a constant or now() is not supported in the SQL "
         "mode",
         31},
        {"DROP INDEX i", n, "DROP INDEX is not supported in the SQL mode", 1},
        {"DROP TABLE a, b", n,
         "dropping several tables in one statement is not supported in the "
         "SQL mode",
         13},
        {"INSERT INTO t VALUES (DEFAULT)", n,
         "DEFAULT in VALUES is not supported in the SQL mode; leave the column out", 23},
        {"INSERT INTO t DEFAULT VALUES", n,
         "DEFAULT VALUES is not supported in the SQL mode; name the columns and "
         "give VALUES",
         15},
        {"INSERT INTO t SELECT 1", n,
         "INSERT ... SELECT is not supported in the SQL mode; use VALUES", 15},
        {"INSERT INTO t VALUES (1) ON CONFLICT (a) DO NOTHING", n,
         "ON CONFLICT with a conflict target is not supported in the SQL mode; use "
         "ON CONFLICT DO "
         "NOTHING",
         38},
        {"INSERT INTO t VALUES (1) ON CONFLICT DO UPDATE SET a = 1", n,
         "ON CONFLICT DO UPDATE is not supported in the SQL mode", 41},
        {"UPDATE t SET a = 1 FROM u", n, "UPDATE ... FROM is not supported in the SQL mode", 20},
        {"UPDATE t SET (a, b) = (1, 2)", n,
         "assigning several columns at once is not supported in the SQL mode", 14},
        {"UPDATE t SET a = DEFAULT", n, "SET column = DEFAULT is not supported in the SQL mode",
         18},
        {"DELETE FROM t USING u", n, "DELETE ... USING is not supported in the SQL mode", 15},
        {"DELETE FROM t WHERE CURRENT OF c", n, "WHERE CURRENT OF is not supported in the SQL mode",
         21},
        {"BEGIN ISOLATION LEVEL SERIALIZABLE", n,
         "isolation level SERIALIZABLE is not supported in the SQL mode; use READ "
         "COMMITTED",
         23},
        {"BEGIN ISOLATION LEVEL REPEATABLE READ", n,
         "isolation level REPEATABLE READ is not supported in the SQL mode; use "
         "READ COMMITTED",
         23},
        {"BEGIN READ ONLY", n, "a READ ONLY transaction is not supported in the SQL mode", 7},
        {"COMMIT AND CHAIN", n, "AND CHAIN is not supported in the SQL mode", 12},
        {"ROLLBACK TO SAVEPOINT a", n, "a savepoint is not supported in the SQL mode", 10},
        {"SAVEPOINT a", n, "SAVEPOINT is not supported in the SQL mode", 1},
        {"COMMIT PREPARED 'x'", n, "COMMIT PREPARED is not supported in the SQL mode", 1},
        {"SET LOCAL x = 1", n, "SET LOCAL is not supported in the SQL mode", 5},
        {"SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", n,
         "SET TRANSACTION is not supported in the SQL mode", 5},
        {"SET search_path = a, b", n, "SET with a list of values is not supported in the SQL mode",
         20},
        {"SET ROLE x", n, "SET ROLE is not supported in the SQL mode", 5},
    });
}

TEST_CASE("checks PostgreSQL makes right after parsing are made with its SQLSTATEs",
          "[sql][parser][errors]") {
    check_errors({
        {"INSERT INTO t (a, a) VALUES (1, 2)", "42701", "column \"a\" specified more than once",
         19},
        {"INSERT INTO t (a, b) VALUES (1)", "42601",
         "INSERT has more target columns than expressions", 19},
        {"INSERT INTO t (a) VALUES (1, 2)", "42601",
         "INSERT has more expressions than target columns", 30},
        {"INSERT INTO t VALUES (1), (1, 2)", "42601", "VALUES lists must all be the same length",
         28},
        {"UPDATE t SET a = 1, a = 2", "42601", "multiple assignments to same column \"a\"", 21},
        {"CREATE TABLE t (a int, a text)", "42701", "column \"a\" specified more than once", 24},
        {"CREATE TABLE t (a int PRIMARY KEY, b int PRIMARY KEY)", "42P16",
         "multiple primary keys for table \"t\" are not allowed", 42},
        {"CREATE TABLE t (a int NULL NOT NULL)", "42601",
         "conflicting NULL/NOT NULL declarations for column \"a\" of table \"t\"", 28},
        {"CREATE TABLE t (a int PRIMARY KEY NULL)", "42601",
         "conflicting NULL/NOT NULL declarations for column \"a\" of table \"t\"", 35},
        {"CREATE TABLE t (a int DEFAULT 1 DEFAULT 2)", "42601",
         "multiple default values specified for column \"a\" of table \"t\"", 33},
        {"CREATE TABLE t (a varchar(0))", "22023", "length for type varchar must be at least 1",
         27},
        {"CREATE TABLE t (a varchar(10485761))", "22023",
         "length for type varchar cannot exceed 10485760", 27},
        {"SELECT 9223372036854775808", "22003",
         "value \"9223372036854775808\" is out of range for type bigint", 8},
        {"SELECT -9223372036854775809", "22003",
         "value \"-9223372036854775809\" is out of range for type bigint", 8},
        {"SELECT 99999999999999999999999", "22003",
         "value \"99999999999999999999999\" is out of range for type bigint", 8},
        {"SELECT $0", "42P02", "there is no parameter $0", 8},
        {"SELECT $65536", "54000", "parameter $65536 is beyond $65535, the limit of the SQL mode",
         8},
    });
}

TEST_CASE("the query must be valid UTF-8 without NUL bytes", "[sql][parser][errors]") {
    using namespace std::string_literals;
    check_errors({
        {"SELECT '\0'"s, "22021", "invalid byte sequence for encoding \"UTF8\": 0x00", 0},
        {"SELECT '\xc3\x28'", "22021", "invalid byte sequence for encoding \"UTF8\": 0xc3 0x28", 0},
        {"SELECT '\xff'", "22021", "invalid byte sequence for encoding \"UTF8\": 0xff", 0},
        {"SELECT '\xed\xa0\x80'", "22021",
         "invalid byte sequence for encoding \"UTF8\": 0xed 0xa0 0x80", 0},
        {"SELECT '\xc0\xaf'", "22021", "invalid byte sequence for encoding \"UTF8\": 0xc0", 0},
        {"SELECT \xe2\x82", "22021", "invalid byte sequence for encoding \"UTF8\": 0xe2 0x82", 0},
    });
}

TEST_CASE("positions count characters, not bytes", "[sql][parser][errors]") {
    check_errors({
        {"SELECT '\xc3\xa9\xc3\xa9\xc3\xa9' OR 1", "0A000",
         "OR is not supported in the SQL mode; use AND", 14},
        {"SELECT '\xe2\x82\xac' +", "42601", "syntax error at end of input", 13},
    });
}

// --- limits
// ------------------------------------------------------------------------------------

TEST_CASE("a query longer than the limit is refused before it is read", "[sql][parser][limits]") {
    ParseLimits limits;
    limits.query_bytes_max = 10;
    check_errors({{"SELECT 1234567", "54000",
                   "the query is 14 bytes, more than 10, the limit of the SQL mode", 0}},
                 limits);
    CHECK(parse_all("SELECT 123", limits).size() == 1);
}

TEST_CASE("a query with more tokens than the limit is refused at the first one too many",
          "[sql][parser][limits]") {
    ParseLimits limits;
    limits.tokens_max = 3;
    check_errors({{"SELECT 1, 2", "54000",
                   "the query has more than 3 tokens, the limit of the SQL mode", 11}},
                 limits);
    CHECK(parse_all("SELECT 1 /* comments are not tokens */ -- nor this\n", limits).size() == 1);
}

TEST_CASE("expressions nested deeper than the limit are refused", "[sql][parser][limits]") {
    const auto nested = [](size_t n) {
        return "SELECT " + std::string(n, '(') + "1" + std::string(n, ')');
    };
    CHECK(parse_all(nested(63)).size() == 1);
    check_errors({{nested(64), "54000",
                   "expressions nest deeper than 64 levels, the limit of the SQL mode", 72}});

    const auto chain = [](size_t terms) {
        std::string q = "SELECT 1";
        for (size_t i = 1; i < terms; ++i) {
            q += "+1";
        }
        return q;
    };
    CHECK(parse_all(chain(64)).size() == 1);
    // The 64th "+" would make the tree 65 deep: 7 + 63 * 2 + 2.
    check_errors({{chain(65), "54000",
                   "expressions nest deeper than 64 levels, the limit of the SQL mode", 135}});

    const auto negations = [](size_t n) {
        std::string q = "SELECT ";
        for (size_t i = 0; i < n; ++i) {
            q += "- ";
        }
        return q + "a";
    };
    CHECK(parse_all(negations(63)).size() == 1);
    CHECK(parse_error(negations(64)).sqlstate == "54000");

    // Far past the limit, the parser stops without exhausting its stack.
    CHECK(parse_error(nested(100000)).sqlstate == "54000");
    CHECK(parse_error(negations(50000)).sqlstate == "54000");
    std::string calls = "SELECT ";
    for (int i = 0; i < 30000; ++i) {
        calls += "f(";
    }
    CHECK(parse_error(calls).sqlstate == "54000");
    // A long fold of minus signs is not nesting.
    CHECK(parse_all(negations(1000).substr(0, 7 + 2000) + "1") ==
          std::vector<std::string>{R"(select items=[lit int4 1] from="")"});
}

TEST_CASE("lists longer than the limit are refused at the first item too many",
          "[sql][parser][limits]") {
    ParseLimits limits;
    limits.list_items_max = 3;
    const std::string m = "a list has more than 3 items, the limit of the SQL mode";
    check_errors(
        {
            {"SELECT 1, 2, 3, 4", "54000", m, 17},
            {"SELECT f(1, 2, 3, 4)", "54000", m, 19},
            {"INSERT INTO t VALUES (1), (2), (3), (4)", "54000", m, 37},
            {"INSERT INTO t VALUES (1, 2, 3, 4)", "54000", m, 32},
            {"INSERT INTO t (a, b, c, d) VALUES (1)", "54000", m, 25},
            {"UPDATE t SET a = 1, b = 2, c = 3, d = 4", "54000", m, 35},
            {"SELECT * FROM t ORDER BY a, b, c, d", "54000", m, 35},
            {"CREATE TABLE t (a int, b int, c int, d int)", "54000", m, 38},
        },
        limits);
    CHECK(parse_all("SELECT 1, 2, 3", limits).size() == 1);
}

TEST_CASE("parameters beyond the limit are refused", "[sql][parser][limits]") {
    ParseLimits limits;
    limits.params_max = 2;
    check_errors(
        {{"SELECT $1, $3", "54000", "parameter $3 is beyond $2, the limit of the SQL mode", 12}},
        limits);
    auto ok = parse("SELECT $65535", kDefaults);
    REQUIRE(ok.ok());
    CHECK((*ok)[0].params_max == 65535);
}

TEST_CASE("parsing is deterministic", "[sql][parser]") {
    const std::string_view query =
        "BEGIN; SELECT * FROM locks WHERE name = $1 FOR UPDATE; UPDATE locks SET "
        "owner = $2, "
        "version = version + 1 WHERE name = $1 AND version = $3 RETURNING version; "
        "COMMIT";
    const std::vector<std::string> first = parse_all(query);
    CHECK(first.size() == 4);
    CHECK(parse_all(query) == first);
}

}  // namespace
}  // namespace raftlock::statemachine::sql
