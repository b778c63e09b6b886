#pragma once

// The PostgreSQL frontend/backend protocol, version 3.0, as pure code over bytes: a decoder of what
// a client sends, encoders of what the server answers, and the binary formats of the parameter
// types the SQL mode understands. The PostgreSQL listener owns the sockets and calls these; the
// fuzzer (tests/fuzz/pg_codec_fuzz.cc) calls exactly the same code. Facts and error texts follow
// the PostgreSQL documentation, chapter "Frontend/Backend Protocol", and the server's own checks
// (postmaster's ProcessStartupPacket, postgres.c's exec_*_message), so a client sees what it would
// see from PostgreSQL where that matters.
//
// Not supported, each refused with a protocol error: protocol versions other than 3.0
// (PostgreSQL answers a newer 3.x with NegotiateProtocolVersion and carries on in 3.0; we close
// the connection instead, which clients that ask for 3.0, as libpq does by default, never see),
// FunctionCall ('F'). A 'p' message is a PasswordMessage when its body is one C string, else a
// SASL message (SASLInitialResponse or SASLResponse), which the server reads knowing which one it
// asked for; the only SASL mechanism is SCRAM-SHA-256.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "base/result.h"

namespace raftlock::net {

// ---------------------------------------------------------------------------------------------
// Constants

// Type OIDs (pg_type.oid) of the types the SQL mode speaks. They are fixed by PostgreSQL.
// statemachine/sql/value.h has the same numbers; net does not link the SQL library, hence these.
inline constexpr uint32_t kPgOidBool = 16;
inline constexpr uint32_t kPgOidInt8 = 20;
inline constexpr uint32_t kPgOidInt2 = 21;
inline constexpr uint32_t kPgOidInt4 = 23;
inline constexpr uint32_t kPgOidText = 25;
inline constexpr uint32_t kPgOidUnknown = 705;
inline constexpr uint32_t kPgOidVarchar = 1043;
inline constexpr uint32_t kPgOidTimestamptz = 1184;

// The request codes of a startup packet: a protocol version (major << 16 | minor), or one of the
// special requests, which PostgreSQL numbers as versions 1234.5678 and up.
inline constexpr uint32_t kPgProtocol3 = 3u << 16;  // 196608, protocol 3.0
inline constexpr uint32_t kPgCancelRequestCode = 80877102;
inline constexpr uint32_t kPgSslRequestCode = 80877103;
inline constexpr uint32_t kPgGssEncRequestCode = 80877104;

// The whole answer to an SSLRequest or a GSSENCRequest: one byte, without a type or a length.
// Refused ("N"; GSSAPI always, TLS on a port without it), the client sends its StartupMessage in
// the clear (or gives up, with sslmode=require); accepted ("S", an SSLRequest on a TLS port), the
// TLS handshake follows (net/pg_listener.cc).
inline constexpr std::string_view kPgEncryptionRefused = "N";
inline constexpr std::string_view kPgEncryptionAccepted = "S";

// Microseconds from the Unix epoch to PostgreSQL's epoch, 2000-01-01 00:00:00 UTC.
inline constexpr int64_t kPgEpochUnixUs = 946'684'800'000'000;

// ---------------------------------------------------------------------------------------------
// Frontend messages (client to server)

struct PgLimits {
    // Largest regular message, counted as its length field counts it (the body and the 4 bytes of
    // the length itself, not the type byte). This bounds a query's text too. PostgreSQL allows
    // 1 GB; every statement of ours becomes a Raft entry held in memory on each node.
    size_t message_bytes_max = 1u << 20;
    // Largest startup packet, length field included: PostgreSQL's MAX_STARTUP_PACKET_LENGTH.
    size_t startup_bytes_max = 10000;
    // Most parameter types of a Parse, and most parameters, parameter formats or result formats of
    // a Bind. The protocol counts them in 16 bits (libpq sends up to 65535); at most 65535 here.
    size_t params_max = 10000;
    // Most name/value pairs of a StartupMessage.
    size_t startup_pairs_max = 64;
};

// A malformed or unsupported message. The server answers with an ErrorResponse (severity FATAL,
// SQLSTATE 08P01 protocol_violation, this message) and closes the connection.
struct PgProtocolError {
    static constexpr std::string_view kSqlstate = "08P01";
    std::string message;

    bool operator==(const PgProtocolError&) const = default;
};

// The format code of a parameter or a result column.
enum class PgFormat : int16_t { kText = 0, kBinary = 1 };

// What a Describe or a Close names: a prepared statement or a portal.
enum class PgTarget : char { kStatement = 'S', kPortal = 'P' };

// StartupMessage (protocol 3.0): the connection's parameters in the order the client sent them,
// e.g. user, database, application_name, options, client_encoding, DateStyle. Names are non-empty
// and "user" is present with a non-empty value. Names may repeat (PostgreSQL lets the later win).
struct PgStartup {
    std::vector<std::pair<std::string, std::string>> parameters;

    // The last value given for `name`, or nullopt. PostgreSQL defaults "database" to the user.
    std::optional<std::string_view> parameter(std::string_view name) const;
    // The user name. Precondition: decoded by PgDecoder (which requires it).
    std::string_view user() const;

    bool operator==(const PgStartup&) const = default;
};

struct PgSslRequest {
    bool operator==(const PgSslRequest&) const = default;
};

struct PgGssEncRequest {
    bool operator==(const PgGssEncRequest&) const = default;
};

// CancelRequest: sent on a new connection, which the server closes after acting on it.
struct PgCancelRequest {
    int32_t process_id = 0;
    uint32_t secret_key = 0;

    bool operator==(const PgCancelRequest&) const = default;
};

// Query ('Q'): one or more statements in the simple query protocol. May be empty.
struct PgQuery {
    std::string sql;

    bool operator==(const PgQuery&) const = default;
};

// Parse ('P'). An empty statement name is the unnamed statement. A type OID of 0 leaves the
// parameter's type for the server to infer; there may be fewer types than parameters.
struct PgParse {
    std::string statement;
    std::string sql;
    std::vector<uint32_t> param_type_oids;

    bool operator==(const PgParse&) const = default;
};

// Bind ('B'). param_formats has 0 entries (all text), 1 (applies to all) or one per parameter;
// the decoder guarantees that. result_formats has 0, 1 or any number of entries: whether it
// matches the statement's columns is for the server to check once it knows them (PostgreSQL:
// "bind message has 2 result formats but query has 3 columns", 08P01).
struct PgBind {
    std::string portal;
    std::string statement;
    std::vector<PgFormat> param_formats;
    std::vector<std::optional<std::string>> params;  // nullopt = NULL; bytes in their format
    std::vector<PgFormat> result_formats;

    // The format of parameter i, by the 0/1/n rule. Precondition: i < params.size().
    PgFormat param_format(size_t i) const;
    // The format of result column i, by the same rule. Precondition: result_formats has at most
    // one entry, or more than i.
    PgFormat result_format(size_t i) const;

    bool operator==(const PgBind&) const = default;
};

// Describe ('D').
struct PgDescribe {
    PgTarget target = PgTarget::kStatement;
    std::string name;

    bool operator==(const PgDescribe&) const = default;
};

// Execute ('E'). max_rows <= 0 means all rows (PostgreSQL treats negatives as 0).
struct PgExecute {
    std::string portal;
    int32_t max_rows = 0;

    bool operator==(const PgExecute&) const = default;
};

struct PgSync {
    bool operator==(const PgSync&) const = default;
};

struct PgFlush {
    bool operator==(const PgFlush&) const = default;
};

// Close ('C').
struct PgClose {
    PgTarget target = PgTarget::kStatement;
    std::string name;

    bool operator==(const PgClose&) const = default;
};

struct PgTerminate {
    bool operator==(const PgTerminate&) const = default;
};

// PasswordMessage ('p'): the cleartext password, or "md5" + 32 hex digits (see net/md5.h).
struct PgPassword {
    std::string password;

    bool operator==(const PgPassword&) const = default;
};

// A 'p' message that is not one C string: SASLInitialResponse (mechanism, int32 length, data) or
// SASLResponse (data), told apart by the server's state (parse_sasl_initial_response).
struct PgSaslMessage {
    std::string body;

    bool operator==(const PgSaslMessage&) const = default;
};

struct PgSaslInitialResponse {
    std::string mechanism;
    std::string data;  // the client-first-message
};
// The body of a SASLInitialResponse; an error names what is wrong, for a FATAL to the client.
Result<PgSaslInitialResponse, std::string> parse_sasl_initial_response(std::string_view body);

// CopyData, CopyDone, CopyFail ('d', 'c', 'f'): decoded only so that the server can answer a
// COPY attempt with a clear error; the SQL mode has no COPY.
struct PgCopyData {
    std::string data;

    bool operator==(const PgCopyData&) const = default;
};

struct PgCopyDone {
    bool operator==(const PgCopyDone&) const = default;
};

struct PgCopyFail {
    std::string message;

    bool operator==(const PgCopyFail&) const = default;
};

using PgFrontendMessage = std::variant<PgStartup,
                                       PgSslRequest,
                                       PgGssEncRequest,
                                       PgCancelRequest,
                                       PgQuery,
                                       PgParse,
                                       PgBind,
                                       PgDescribe,
                                       PgExecute,
                                       PgSync,
                                       PgFlush,
                                       PgClose,
                                       PgTerminate,
                                       PgPassword,
                                       PgSaslMessage,
                                       PgCopyData,
                                       PgCopyDone,
                                       PgCopyFail>;

// What PgDecoder::next() returns: a message, nullopt when the bytes fed so far hold no complete
// message (read more and call again), or the error that ends the connection.
using PgNext = Result<std::optional<PgFrontendMessage>, PgProtocolError>;

// The decoder of one connection's client bytes. Feed bytes as they arrive, then take messages with
// next() until it returns nullopt.
//
// Phases: a connection starts with startup packets (Int32 length including itself, Int32 code,
// no type byte). An SSLRequest or GSSENCRequest (each allowed once) leaves it there: the caller
// writes kPgEncryptionRefused and the client follows with its StartupMessage. After a
// StartupMessage the caller calls start_regular() (before authentication, since a
// PasswordMessage is already a regular message); after a CancelRequest it closes the connection.
// Regular messages are a type byte, an Int32 length including itself, and the body.
//
// Errors: every malformed, unknown or oversized message is a PgProtocolError, after which the
// decoder is poisoned: next() returns the same error forever and feed() drops its bytes. A length
// over the limit is refused as soon as the length arrives, before the body is buffered.
//
// Memory: the buffer holds the bytes fed and not yet taken. The caller bounds it by draining
// next() after each feed(), or by not reading from the socket while it holds more than it wants
// (a pipelining client can send many complete messages in one read). Consumption is amortised
// O(1) per byte: taken bytes are skipped, and dropped from the front only when they outnumber the
// rest.
class PgDecoder final {
public:
    enum class Phase : uint8_t {
        kStartup,      // expecting a startup packet
        kStartupDone,  // a StartupMessage was returned; waiting for start_regular()
        kRegular,      // typed messages
        kCancelled,    // a CancelRequest was returned; the caller closes the connection
    };

    // Precondition: limits in range: message_bytes_max in [4, 2^31 - 1], startup_bytes_max in
    // [16, 2^31 - 1], params_max <= 65535, startup_pairs_max >= 1.
    explicit PgDecoder(PgLimits limits = {});

    // Appends bytes received from the client (any split: a message may arrive in any number of
    // pieces, several messages in one). Ignored once poisoned.
    void feed(std::string_view bytes);

    // Takes the next complete message. Precondition: phase() is kStartup or kRegular.
    PgNext next();

    // Switches to regular messages. Precondition: phase() is kStartup (for tests and tools that
    // skip the startup) or kStartupDone.
    void start_regular();

    Phase phase() const { return phase_; }
    bool poisoned() const { return error_.has_value(); }

    // Bytes fed and not yet taken. Once next() has returned nullopt these are exactly the bytes of
    // the one incomplete message at the front: a server arms an idle deadline while this is > 0,
    // so that a client cannot hold a half-sent message (and its buffer) forever.
    size_t partial_bytes() const { return buffer_.size() - read_pos_; }

private:
    PgNext next_startup();
    PgNext next_regular();
    PgNext fail(PgProtocolError error);

    PgLimits limits_;
    Phase phase_ = Phase::kStartup;
    bool ssl_requested_ = false;
    bool gss_requested_ = false;
    std::string buffer_;
    size_t read_pos_ = 0;  // buffer_[0, read_pos_) was taken
    std::optional<PgProtocolError> error_;
};

// Stable one-line forms for logs and tests, e.g.
// `Bind portal="" statement="s1" params=[bin(4) null text(3)] results=[text]`. Strings are quoted
// with \" \\ and \xNN escapes and cut after 64 bytes ("<64 bytes>"...(+N bytes)); lists show
// their first 16 items. Secrets are not printed: a PasswordMessage and a CopyData show their
// length, a CancelRequest only its process id.
std::string to_string(const PgStartup& m);
std::string to_string(const PgSslRequest& m);
std::string to_string(const PgGssEncRequest& m);
std::string to_string(const PgCancelRequest& m);
std::string to_string(const PgQuery& m);
std::string to_string(const PgParse& m);
std::string to_string(const PgBind& m);
std::string to_string(const PgDescribe& m);
std::string to_string(const PgExecute& m);
std::string to_string(const PgSync& m);
std::string to_string(const PgFlush& m);
std::string to_string(const PgClose& m);
std::string to_string(const PgTerminate& m);
std::string to_string(const PgPassword& m);
std::string to_string(const PgSaslMessage& m);
std::string to_string(const PgCopyData& m);
std::string to_string(const PgCopyDone& m);
std::string to_string(const PgCopyFail& m);
std::string to_string(const PgFrontendMessage& m);

// ---------------------------------------------------------------------------------------------
// Backend messages (server to client)
//
// Each function appends one complete message to `out`, so that a batch of replies is one buffer
// and one write. Strings go out as C strings: one that holds a NUL byte is cut at it, so text that
// came from a client can never break the framing. Preconditions (asserted): a message fits in the
// protocol's Int32 length, and a list (fields, values, OIDs) has at most 65535 entries.

// ReadyForQuery's transaction status.
enum class PgTransactionStatus : char {
    kIdle = 'I',
    kInTransaction = 'T',
    kFailedTransaction = 'E',  // in a transaction that failed: statements until ROLLBACK fail
};

enum class PgSeverity : uint8_t { kFatal, kError, kWarning, kNotice };

// "FATAL", "ERROR", "WARNING", "NOTICE".
std::string_view to_string(PgSeverity severity);

// The fields of an ErrorResponse or NoticeResponse. S and V (severity), C and M are always
// written, as the protocol requires; D, H and P only when non-empty (non-zero).
struct PgDiagnostic {
    PgSeverity severity = PgSeverity::kError;
    std::string sqlstate;  // exactly 5 characters, e.g. "55P03" lock_not_available (asserted)
    std::string message;   // primary message, one line, lower case, no final period
    std::string detail;
    std::string hint;
    uint32_t position = 0;  // 1-based character index into the query; 0 = none
};

// One column of a RowDescription.
struct PgField {
    std::string name;
    uint32_t table_oid = 0;     // 0: not a column of a table
    int16_t column_attnum = 0;  // 0: not a column of a table
    uint32_t type_oid = kPgOidText;
    int16_t type_size = -1;  // pg_type.typlen: -1 variable length (text, varchar)
    int32_t type_modifier = -1;
    PgFormat format = PgFormat::kText;

    bool operator==(const PgField&) const = default;
};

// pg_type.typlen of the types above: 1 bool, 2 int2, 4 int4, 8 int8 and timestamptz, -1 (variable)
// for text, varchar, unknown and any other OID. (unknown is really -2, a C string, but clients
// read column sizes only to print them.)
int16_t pg_type_size(uint32_t type_oid);

// A field with the given name, type and format, its size from pg_type_size and the other members
// at their defaults.
PgField pg_field(std::string name, uint32_t type_oid, PgFormat format = PgFormat::kText);

void encode_authentication_ok(std::string& out);
void encode_authentication_cleartext_password(std::string& out);
void encode_authentication_md5_password(std::array<uint8_t, 4> salt, std::string& out);
// AuthenticationSASL (10) offering SCRAM-SHA-256, AuthenticationSASLContinue (11) and
// AuthenticationSASLFinal (12) carrying the server's SCRAM messages.
void encode_authentication_sasl_scram(std::string& out);
void encode_authentication_sasl_continue(std::string_view data, std::string& out);
void encode_authentication_sasl_final(std::string_view data, std::string& out);
// What a PostgreSQL client sends in its PasswordMessage after AuthenticationMD5Password(salt):
// "md5" + hex(md5(hex(md5(password + user)) + the 4 salt bytes)), 35 characters. The server
// computes the same from the password it knows and compares. The inner hash is what PostgreSQL
// stores in pg_authid. MD5 is broken as a cryptographic hash; clients still speak this exchange.
std::string pg_md5_password(std::string_view password,
                            std::string_view user,
                            std::array<uint8_t, 4> salt);
void encode_parameter_status(std::string_view name, std::string_view value, std::string& out);
void encode_backend_key_data(int32_t process_id, uint32_t secret_key, std::string& out);
void encode_ready_for_query(PgTransactionStatus status, std::string& out);
void encode_row_description(std::span<const PgField> fields, std::string& out);
// `values` are already in their column's wire format (text or binary); nullopt is NULL.
void encode_data_row(std::span<const std::optional<std::string>> values, std::string& out);
// The command tag, e.g. "SELECT 1", "INSERT 0 1", "UPDATE 3", "BEGIN".
void encode_command_complete(std::string_view tag, std::string& out);
void encode_empty_query_response(std::string& out);
void encode_error_response(const PgDiagnostic& diagnostic, std::string& out);
void encode_notice_response(const PgDiagnostic& diagnostic, std::string& out);
void encode_parse_complete(std::string& out);
void encode_bind_complete(std::string& out);
void encode_close_complete(std::string& out);
void encode_no_data(std::string& out);
void encode_portal_suspended(std::string& out);
void encode_parameter_description(std::span<const uint32_t> type_oids, std::string& out);
// NegotiateProtocolVersion: the newest version the server supports (kPgProtocol3), and the
// "_pq_." protocol options of the StartupMessage it does not recognise. Unused while the decoder
// refuses 3.x for x > 0; here for a server that wants to accept them instead.
void encode_negotiate_protocol_version(uint32_t newest_version,
                                       std::span<const std::string> unrecognized_options,
                                       std::string& out);

// ---------------------------------------------------------------------------------------------
// Binary formats of parameters and results (the extended protocol's format code 1), as psycopg 3
// and node-postgres send them. Text and varchar are their bytes as they are in either format.

enum class PgValueErrorCode : uint8_t {
    kInvalidBinaryRepresentation,  // 22P03: wrong length or byte
    kDatetimeOutOfRange,           // 22008: a timestamptz outside the supported range
};

struct PgValueError {
    PgValueErrorCode code = PgValueErrorCode::kInvalidBinaryRepresentation;
    std::string message;  // names the type, e.g. "incorrect binary data format for int4: 3 bytes"

    std::string_view sqlstate() const;
};

// Big-endian two's complement of exactly 2, 4 or 8 bytes.
Result<int16_t, PgValueError> decode_binary_int2(std::string_view bytes);
Result<int32_t, PgValueError> decode_binary_int4(std::string_view bytes);
Result<int64_t, PgValueError> decode_binary_int8(std::string_view bytes);
// Exactly one byte, 0 (false) or 1 (true). PostgreSQL reads any non-zero byte as true; we refuse
// anything else, which no client sends.
Result<bool, PgValueError> decode_binary_bool(std::string_view bytes);
// An Int64 of microseconds since 2000-01-01 UTC, returned as microseconds since the Unix epoch.
// Infinite values (PostgreSQL's INT64 min/max) and values before 4714-11-24 BC (PostgreSQL's
// minimum) or too late to shift to the Unix epoch in 64 bits (in January 294247 AD) are
// kDatetimeOutOfRange.
Result<int64_t, PgValueError> decode_binary_timestamptz(std::string_view bytes);

std::string encode_binary_int2(int16_t value);
std::string encode_binary_int4(int32_t value);
std::string encode_binary_int8(int64_t value);
std::string encode_binary_bool(bool value);
// The inverse of decode_binary_timestamptz: kDatetimeOutOfRange before 4714-11-24 BC.
Result<std::string, PgValueError> encode_binary_timestamptz(int64_t unix_us);

}  // namespace raftlock::net
