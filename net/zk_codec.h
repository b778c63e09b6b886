#pragma once

// The ZooKeeper client protocol (jute records, as ZooKeeper 3.5-3.9 clients send them) as pure
// code over bytes: a decoder of what a client sends, encoders of what the server answers. The
// ZooKeeper listener owns the sockets and calls these; the fuzzer (tests/fuzz/zk_codec_fuzz.cc)
// calls exactly the same code. Numbers and layouts follow ZooKeeper's zookeeper.jute and
// ZooDefs/KeeperException (docs/zookeeper-mode.md).
//
// Framing: every message is a 4-byte big-endian length, then that many bytes: raftlock's own
// frames, so the listener splits them with net/frame.h's FrameDecoder bounded by
// kDefaultMaxBuffer (a negative length reads as one above the bound). The first message
// of a connection is a ConnectRequest; every later one is a RequestHeader {xid, type} followed by
// the record of its type. Answers are a ReplyHeader {xid, zxid, err} followed, when err is 0, by
// the record of the request's type; watch notifications are replies with xid -1.
//
// Jute encodings: int and long are big-endian 4 and 8 bytes; a boolean one byte; a buffer and a
// ustring an int length (-1: null) then the bytes; a vector an int count (-1: null) then its items.
// Decoding never allocates more than the payload's size: a length or a count is checked against
// the bytes that remain before anything is reserved.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/result.h"

namespace raftlock::net::zk {

// ---------------------------------------------------------------------------------------------
// Numbers ZooKeeper fixes

// ZooDefs.OpCode.
enum class OpCode : int32_t {
    kNotification = 0,
    kCreate = 1,
    kDelete = 2,
    kExists = 3,
    kGetData = 4,
    kSetData = 5,
    kGetAcl = 6,
    kSetAcl = 7,
    kGetChildren = 8,
    kSync = 9,
    kPing = 11,
    kGetChildren2 = 12,
    kCheck = 13,
    kMulti = 14,
    kCreate2 = 15,
    kReconfig = 16,
    kCheckWatches = 17,
    kRemoveWatches = 18,
    kCreateContainer = 19,
    kDeleteContainer = 20,
    kCreateTtl = 21,
    kMultiRead = 22,
    kAuth = 100,
    kSetWatches = 101,
    kSasl = 102,
    kGetEphemerals = 103,
    kGetAllChildrenNumber = 104,
    kSetWatches2 = 105,
    kAddWatch = 106,
    kWhoAmI = 107,
    kCreateSession = -10,
    kCloseSession = -11,
    kError = -1,  // a failed operation's header inside a multi response
};

// KeeperException.Code.
enum class Err : int32_t {
    kOk = 0,
    kSystemError = -1,
    kRuntimeInconsistency = -2,
    kDataInconsistency = -3,
    kConnectionLoss = -4,
    kMarshallingError = -5,
    kUnimplemented = -6,
    kOperationTimeout = -7,
    kBadArguments = -8,
    kUnknownSession = -12,
    kNewConfigNoQuorum = -13,
    kReconfigInProgress = -14,
    kApiError = -100,
    kNoNode = -101,
    kNoAuth = -102,
    kBadVersion = -103,
    kNoChildrenForEphemerals = -108,
    kNodeExists = -110,
    kNotEmpty = -111,
    kSessionExpired = -112,
    kInvalidCallback = -113,
    kInvalidAcl = -114,
    kAuthFailed = -115,
    kSessionMoved = -118,
    kNotReadOnly = -119,
    kEphemeralOnLocalSession = -120,
    kNoWatcher = -121,
    kRequestTimeout = -122,
    kReconfigDisabled = -123,
    kSessionClosedRequireSaslAuth = -124,
    kQuotaExceeded = -125,
    kThrottledOp = -127,
};

// Reserved xids (ClientCnxn).
inline constexpr int32_t kXidNotification = -1;
inline constexpr int32_t kXidPing = -2;
inline constexpr int32_t kXidAuth = -4;
inline constexpr int32_t kXidSetWatches = -8;

// CreateMode, as the `flags` of a create.
enum class CreateMode : int32_t {
    kPersistent = 0,
    kEphemeral = 1,
    kPersistentSequential = 2,
    kEphemeralSequential = 3,
    kContainer = 4,
    kPersistentWithTtl = 5,
    kPersistentSequentialWithTtl = 6,
};

// Watcher.Event.EventType.
enum class EventType : int32_t {
    kNone = -1,
    kNodeCreated = 1,
    kNodeDeleted = 2,
    kNodeDataChanged = 3,
    kNodeChildrenChanged = 4,
    kDataWatchRemoved = 5,
    kChildWatchRemoved = 6,
    kPersistentWatchRemoved = 7,
};

// Watcher.Event.KeeperState (the ones a server sends).
enum class KeeperState : int32_t {
    kSyncConnected = 3,
    kExpired = -112,
};

// ZooDefs.Perms.
inline constexpr int32_t kPermRead = 1;
inline constexpr int32_t kPermWrite = 2;
inline constexpr int32_t kPermCreate = 4;
inline constexpr int32_t kPermDelete = 8;
inline constexpr int32_t kPermAdmin = 16;
inline constexpr int32_t kPermAll = 31;

// The largest message either side accepts: ZooKeeper's jute.maxbuffer default, 1 MiB (0xfffff).
inline constexpr size_t kDefaultMaxBuffer = 0xfffff;
// A ConnectResponse's password: ZooKeeper's is 16 bytes.
inline constexpr size_t kPasswordBytes = 16;

// ---------------------------------------------------------------------------------------------
// Records

struct Stat {
    int64_t czxid = 0;
    int64_t mzxid = 0;
    int64_t ctime = 0;  // ms since the Unix epoch
    int64_t mtime = 0;
    int32_t version = 0;
    int32_t cversion = 0;
    int32_t aversion = 0;
    int64_t ephemeral_owner = 0;
    int32_t data_length = 0;
    int32_t num_children = 0;
    int64_t pzxid = 0;

    bool operator==(const Stat&) const = default;
};

struct Id {
    std::string scheme;
    std::string id;
    bool operator==(const Id&) const = default;
};

struct Acl {
    int32_t perms = 0;
    Id id;
    bool operator==(const Acl&) const = default;
};

struct ConnectRequest {
    int32_t protocol_version = 0;
    int64_t last_zxid_seen = 0;
    int32_t timeout_ms = 0;
    int64_t session_id = 0;
    std::string password;
    // Clients before 3.4 do not send the flag; then it is absent (and false).
    std::optional<bool> read_only;
};

struct ConnectResponse {
    int32_t protocol_version = 0;
    int32_t timeout_ms = 0;  // 0 with session id 0: the session is expired or unknown
    int64_t session_id = 0;
    std::string password;
    bool read_only = false;
};

// create, create2, createContainer, createTTL.
struct CreateRequest {
    std::string path;
    std::optional<std::string> data;  // empty: a null buffer
    std::vector<Acl> acl;
    int32_t flags = 0;
    int64_t ttl = 0;  // createTTL only
};
struct DeleteRequest {  // delete, deleteContainer (version -1)
    std::string path;
    int32_t version = -1;
};
struct PathWatchRequest {  // exists, getData, getChildren, getChildren2
    std::string path;
    bool watch = false;
};
struct SetDataRequest {
    std::string path;
    std::optional<std::string> data;
    int32_t version = -1;
};
struct PathRequest {  // sync, getACL, getEphemerals (prefix), getAllChildrenNumber
    std::string path;
};
struct CheckVersionRequest {
    std::string path;
    int32_t version = -1;
};
struct SetAclRequest {
    std::string path;
    std::vector<Acl> acl;
    int32_t version = -1;
};
struct SetWatchesRequest {  // setWatches; setWatches2 adds the persistent ones
    int64_t relative_zxid = 0;
    std::vector<std::string> data_watches;
    std::vector<std::string> exist_watches;
    std::vector<std::string> child_watches;
    std::vector<std::string> persistent_watches;
    std::vector<std::string> persistent_recursive_watches;
};
struct AddWatchRequest {
    std::string path;
    int32_t mode = 0;  // AddWatchMode: 0 persistent, 1 persistent recursive
};
struct WatchesRequest {  // checkWatches, removeWatches
    std::string path;
    int32_t type = 0;  // WatcherType: 1 children, 2 data, 3 any
};
struct AuthRequest {
    int32_t type = 0;
    std::string scheme;
    std::string auth;
};
struct EmptyRequest {};  // ping, closeSession, whoAmI

// One operation of a multi (create, create2, createTTL, delete, setData, check) or of a multiRead
// (getData, getChildren).
struct MultiOp {
    OpCode type = OpCode::kCreate;
    std::
        variant<CreateRequest, DeleteRequest, SetDataRequest, CheckVersionRequest, PathWatchRequest>
            body;
};
struct MultiRequest {
    std::vector<MultiOp> ops;
};

using RequestBody = std::variant<EmptyRequest,
                                 CreateRequest,
                                 DeleteRequest,
                                 PathWatchRequest,
                                 SetDataRequest,
                                 PathRequest,
                                 CheckVersionRequest,
                                 SetAclRequest,
                                 SetWatchesRequest,
                                 AddWatchRequest,
                                 WatchesRequest,
                                 AuthRequest,
                                 MultiRequest>;

struct Request {
    int32_t xid = 0;
    OpCode type = OpCode::kPing;
    RequestBody body;
};

// Why a message could not be decoded. `fatal`: the bytes are not a request (truncated, a length
// beyond the payload, bytes left over): ZooKeeper closes the connection. Otherwise the header was
// read and the operation is one this server does not serve (reconfig, sasl, an unknown type): it
// answers that xid with kUnimplemented and carries on.
struct DecodeError {
    bool fatal = true;
    int32_t xid = 0;
    int32_t type = 0;
    std::string message;
};

// Most operations in one multi; ZooKeeper has no such limit but the message size, and each
// operation here costs a record, so this bounds the work a single frame can ask for.
inline constexpr size_t kMultiOpsMax = 10000;

// The payload of the first message (after its length).
Result<ConnectRequest, std::string> decode_connect_request(std::string_view payload);
// The payload of any later message.
Result<Request, DecodeError> decode_request(std::string_view payload);

// ---------------------------------------------------------------------------------------------
// Answers

struct CreateResponse {  // create: the path made (with its sequence number)
    std::string path;
};
struct Create2Response {  // create2, createContainer, createTTL
    std::string path;
    Stat stat;
};
struct StatResponse {  // exists, setData, setACL
    Stat stat;
};
struct GetDataResponse {
    std::optional<std::string> data;
    Stat stat;
};
struct ChildrenResponse {  // getChildren; getChildren2 with a stat
    std::vector<std::string> children;
    std::optional<Stat> stat;
};
struct GetAclResponse {
    std::vector<Acl> acl;
    Stat stat;
};
struct PathResponse {  // sync
    std::string path;
};
struct PathsResponse {  // getEphemerals
    std::vector<std::string> paths;
};
struct CountResponse {  // getAllChildrenNumber
    int32_t count = 0;
};
struct ClientInfo {
    std::string auth_scheme;
    std::string user;
};
struct WhoAmIResponse {
    std::vector<ClientInfo> infos;
};
struct EmptyResponse {};  // delete, ping, closeSession, setWatches, check, auth, ...
struct ErrorResponse {    // addWatch: ZooKeeper answers it with an ErrorResponse record
    Err err = Err::kOk;
};

// One result of a multi or multiRead: the op's type and its answer, or kError with the code.
struct MultiResult {
    OpCode type = OpCode::kError;
    Err err = Err::kOk;  // kError only
    std::variant<EmptyResponse,
                 CreateResponse,
                 Create2Response,
                 StatResponse,
                 GetDataResponse,
                 ChildrenResponse>
        body;
};
struct MultiResponse {
    std::vector<MultiResult> results;
};

using ResponseBody = std::variant<EmptyResponse,
                                  ErrorResponse,
                                  CreateResponse,
                                  Create2Response,
                                  StatResponse,
                                  GetDataResponse,
                                  ChildrenResponse,
                                  GetAclResponse,
                                  PathResponse,
                                  PathsResponse,
                                  CountResponse,
                                  WhoAmIResponse,
                                  MultiResponse>;

// Each appends one whole message, with its 4-byte length, to `out`.
void encode_connect_response(const ConnectResponse& response, std::string& out);
// The body is written only when err is kOk, as ZooKeeper does.
void encode_reply(int32_t xid, int64_t zxid, Err err, const ResponseBody& body, std::string& out);
void encode_watch_event(
    int64_t zxid, EventType type, KeeperState state, std::string_view path, std::string& out);

// A client's side, for tests and tools: the inverse of the functions above.
void encode_connect_request(const ConnectRequest& request, std::string& out);
void encode_request(const Request& request, std::string& out);

const char* to_string(OpCode type);

}  // namespace raftlock::net::zk
