#include "base/scram.h"

#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include "base/base64.h"

namespace raftlock::base::scram {
namespace {

// RFC 7677 section 3's example exchange, byte for byte.
constexpr std::string_view kRfcUser = "user";
constexpr std::string_view kRfcPassword = "pencil";
constexpr std::string_view kRfcClientNonce = "rOprNGfwEbeRWgbNEkqO";
constexpr std::string_view kRfcServerNonceSuffix = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
constexpr std::string_view kRfcSaltBase64 = "W22ZaJ0SNY7soEsUEjb6gQ==";
constexpr std::string_view kRfcClientFirst = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
constexpr std::string_view kRfcServerFirst =
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
constexpr std::string_view kRfcClientFinal =
    "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
constexpr std::string_view kRfcServerFinal = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";
constexpr std::string_view kTestServerSecret = "a server secret of 32 bytes.....";

// The RFC's verifier, derived once: each derivation costs 4096 HMACs.
const Verifier& rfc_verifier() {
    static const Verifier verifier =
        make_verifier(kRfcPassword, *base64_decode(kRfcSaltBase64), kIterationsMin);
    return verifier;
}

// A server exchange at the RFC's second step, after a fresh parse of its client-first-message.
ServerExchange rfc_server_exchange() {
    Result<ClientFirst, Error> first = parse_client_first(kRfcClientFirst);
    REQUIRE(first.ok());
    return ServerExchange(std::move(first).value(), rfc_verifier(),
                          std::string(kRfcServerNonceSuffix));
}

ClientExchange rfc_client_exchange(std::string_view password = kRfcPassword) {
    return ClientExchange(std::string(kRfcUser), std::string(password),
                          std::string(kRfcClientNonce));
}

TEST_CASE("the client sends RFC 7677's example exchange byte for byte", "[scram]") {
    ClientExchange client = rfc_client_exchange();
    CHECK(client.client_first() == kRfcClientFirst);
    Result<std::string, Error> final_message = client.server_first(kRfcServerFirst);
    REQUIRE(final_message.ok());
    CHECK(*final_message == kRfcClientFinal);
    CHECK_FALSE(client.succeeded());
    CHECK(client.server_final(kRfcServerFinal).ok());
    CHECK(client.succeeded());
}

TEST_CASE("the server answers RFC 7677's example exchange byte for byte", "[scram]") {
    Result<ClientFirst, Error> first = parse_client_first(kRfcClientFirst);
    REQUIRE(first.ok());
    CHECK(first->user == "user");
    CHECK(first->client_nonce == kRfcClientNonce);
    CHECK(first->gs2_header == "n,,");
    CHECK(first->bare == "n=user,r=rOprNGfwEbeRWgbNEkqO");

    ServerExchange server = rfc_server_exchange();
    CHECK(server.server_first() == kRfcServerFirst);
    Result<std::string, Error> final_message = server.client_final(kRfcClientFinal);
    REQUIRE(final_message.ok());
    CHECK(*final_message == kRfcServerFinal);
    CHECK(server.succeeded());
}

TEST_CASE("a client and a server drive each other to success", "[scram]") {
    const std::string salt = random_bytes(kSaltBytes);
    const Verifier verifier = make_verifier("correct horse", salt, kIterationsMin);
    for (const std::string user : {"alice", "bob,the=builder", "zoë"}) {
        INFO("user " << user);
        ClientExchange client(user, "correct horse", random_nonce());
        Result<ClientFirst, Error> first = parse_client_first(client.client_first());
        REQUIRE(first.ok());
        CHECK(first->user == user);
        ServerExchange server(std::move(first).value(), verifier, random_nonce());
        Result<std::string, Error> client_final = client.server_first(server.server_first());
        REQUIRE(client_final.ok());
        Result<std::string, Error> server_final = server.client_final(*client_final);
        REQUIRE(server_final.ok());
        CHECK(server.succeeded());
        CHECK(client.server_final(*server_final).ok());
        CHECK(client.succeeded());
    }
}

TEST_CASE("a wrong password is refused with no more than \"wrong password\"", "[scram]") {
    ClientExchange client = rfc_client_exchange("pencil2");
    ServerExchange server = rfc_server_exchange();
    Result<std::string, Error> client_final = client.server_first(server.server_first());
    REQUIRE(client_final.ok());
    Result<std::string, Error> server_final = server.client_final(*client_final);
    REQUIRE_FALSE(server_final.ok());
    CHECK(server_final.error().code == ErrorCode::kWrongPassword);
    CHECK(server_final.error().message == "wrong password");
    CHECK_FALSE(server.succeeded());
}

TEST_CASE("a proof for another nonce is refused", "[scram]") {
    // The RFC's message with the last nonce character changed: a replay into another exchange.
    std::string tampered(kRfcClientFinal);
    const size_t at = tampered.find("$k0,p=");
    REQUIRE(at != std::string::npos);
    tampered[at + 2] = '1';
    ServerExchange server = rfc_server_exchange();
    Result<std::string, Error> refused = server.client_final(tampered);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ErrorCode::kNonceMismatch);
    CHECK_FALSE(server.succeeded());
}

TEST_CASE("a client refuses a server nonce that does not extend its own", "[scram]") {
    const std::vector<std::string_view> server_firsts = {
        // Not starting with the client's nonce.
        "r=XOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
        // The client's nonce alone: the server added nothing fresh.
        "r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
        // A prefix of the client's nonce.
        "r=rOprNGfwEbe,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    };
    for (const std::string_view message : server_firsts) {
        INFO(message);
        ClientExchange client = rfc_client_exchange();
        Result<std::string, Error> refused = client.server_first(message);
        REQUIRE_FALSE(refused.ok());
        CHECK(refused.error().code == ErrorCode::kNonceMismatch);
    }
}

TEST_CASE("a client refuses a server signature that is not the verifier's", "[scram]") {
    ClientExchange client = rfc_client_exchange();
    REQUIRE(client.server_first(kRfcServerFirst).ok());
    // A valid signature of another exchange: same length, one bit different.
    std::string forged(kRfcServerFinal);
    forged[2] = forged[2] == 'A' ? 'B' : 'A';
    Result<std::monostate, Error> refused = client.server_final(forged);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ErrorCode::kBadServerSignature);
    CHECK_FALSE(client.succeeded());
}

TEST_CASE("a client reports the server's error text", "[scram]") {
    ClientExchange client = rfc_client_exchange();
    REQUIRE(client.server_first(kRfcServerFirst).ok());
    Result<std::monostate, Error> refused = client.server_final("e=invalid-proof");
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ErrorCode::kServerError);
    CHECK(refused.error().message == "server refused: invalid-proof");
    CHECK_FALSE(client.succeeded());
}

struct MalformedCase {
    std::string message;
    ErrorCode code;
};

TEST_CASE("malformed client-first-messages are refused", "[scram]") {
    const std::vector<MalformedCase> cases = {
        {"", ErrorCode::kMalformed},
        {"n,,", ErrorCode::kMalformed},
        {"n,,n=user", ErrorCode::kMalformed},
        {"n,,n=user,", ErrorCode::kMalformed},
        {"n,,n=user,r=", ErrorCode::kMalformed},
        {"n,,r=nonce,n=user", ErrorCode::kMalformed},
        {"x,,n=user,r=nonce", ErrorCode::kMalformed},
        {"nn,,n=user,r=nonce", ErrorCode::kMalformed},
        {"n,x,n=user,r=nonce", ErrorCode::kMalformed},
        {"n,,n=us=er,r=nonce", ErrorCode::kMalformed},
        {"n,,n=us=2c,r=nonce", ErrorCode::kMalformed},  // escapes are upper case
        {"n,,n=user=2,r=nonce", ErrorCode::kMalformed},
        {"n,,n=user=,r=nonce", ErrorCode::kMalformed},
        {std::string("n,,n=us\0er,r=nonce", 18), ErrorCode::kMalformed},
        {"n,,n=\xff,r=nonce", ErrorCode::kMalformed},
        {"n,,n=\xc0\xaf,r=nonce", ErrorCode::kMalformed},      // an overlong '/'
        {"n,,n=\xed\xa0\x80,r=nonce", ErrorCode::kMalformed},  // a surrogate
        {"n,,n=\xe2\x82,r=nonce", ErrorCode::kMalformed},      // cut short
        {"n,,n=user,r=non ce", ErrorCode::kMalformed},
        {"n,,n=user,r=non\x7f", ErrorCode::kMalformed},
        {"n,,n=user,r=nonce,", ErrorCode::kMalformed},
        {"n,,n=user,r=nonce,x", ErrorCode::kMalformed},
        {"n,,n=user,r=nonce,x=", ErrorCode::kMalformed},
        {"n,,n=user,r=nonce,1=ext", ErrorCode::kMalformed},
        {"n,,n=user,r=nonce,r=again", ErrorCode::kMalformed},
        {"n,,n=user,r=nonce,x=\xff", ErrorCode::kMalformed},
        {"n,,n=user,r=nonce,m=late", ErrorCode::kMalformed},
        {"n,,n=user,r=" + std::string(kMessageBytesMax, 'a'), ErrorCode::kMalformed},
        {"p=tls-unique,,n=user,r=nonce", ErrorCode::kUnsupported},
        {"n,a=admin,n=user,r=nonce", ErrorCode::kUnsupported},
        {"n,,m=must,n=user,r=nonce", ErrorCode::kUnsupported},
    };
    for (const MalformedCase& c : cases) {
        INFO(c.message.substr(0, 80));
        Result<ClientFirst, Error> parsed = parse_client_first(c.message);
        REQUIRE_FALSE(parsed.ok());
        CHECK(parsed.error().code == c.code);
        CHECK_FALSE(parsed.error().message.empty());
    }
}

TEST_CASE("well-formed client-first-messages are accepted", "[scram]") {
    // "y": the client could bind a channel but believes this server cannot, which is true.
    Result<ClientFirst, Error> y = parse_client_first("y,,n=user,r=nonce");
    REQUIRE(y.ok());
    CHECK(y->gs2_header == "y,,");
    // Optional extensions are checked and ignored; the nonce may hold '='.
    Result<ClientFirst, Error> ext = parse_client_first("n,,n=user,r=no=nce,x=1,Y=zoë");
    REQUIRE(ext.ok());
    CHECK(ext->client_nonce == "no=nce");
    CHECK(ext->bare == "n=user,r=no=nce,x=1,Y=zoë");
    // Exactly at the bound.
    const std::string longest = "n,,n=user,r=" + std::string(kMessageBytesMax - 12, 'a');
    REQUIRE(longest.size() == kMessageBytesMax);
    CHECK(parse_client_first(longest).ok());
}

TEST_CASE("a \"y\" client-first-message needs the matching channel-binding echo", "[scram]") {
    Result<ClientFirst, Error> first = parse_client_first("y,,n=user,r=nonce");
    REQUIRE(first.ok());
    // c=biws echoes "n,,", not the "y,," sent: a sign that something rewrote the first message.
    ServerExchange refusing(first.value(), rfc_verifier(), "suffix");
    Result<std::string, Error> refused = refusing.client_final(
        "c=biws,r=noncesuffix,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ErrorCode::kMalformed);
    // With "c=eSws" (base64 of "y,,") the echo passes and the proof is what is judged.
    ServerExchange judging(first.value(), rfc_verifier(), "suffix");
    Result<std::string, Error> judged =
        judging.client_final("c=eSws,r=noncesuffix,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
    REQUIRE_FALSE(judged.ok());
    CHECK(judged.error().code == ErrorCode::kWrongPassword);
}

TEST_CASE("malformed client-final-messages are refused", "[scram]") {
    const std::string nonce = std::string(kRfcClientNonce) + std::string(kRfcServerNonceSuffix);
    const std::string proof = "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    const std::vector<MalformedCase> cases = {
        {"", ErrorCode::kMalformed},
        {"c=biws", ErrorCode::kMalformed},
        {"c=biws,r=" + nonce, ErrorCode::kMalformed},
        {"c=biws,r=" + nonce + ",", ErrorCode::kMalformed},
        {"c=biws,r=" + nonce + ",p=", ErrorCode::kMalformed},
        {"r=" + nonce + ",c=biws," + proof, ErrorCode::kMalformed},
        {"c=biws," + proof + ",r=" + nonce, ErrorCode::kMalformed},
        {"c=eSws,r=" + nonce + "," + proof, ErrorCode::kMalformed},  // echoes "y,,"
        {"c=biw,r=" + nonce + "," + proof, ErrorCode::kMalformed},
        {"c=cD10bHMtdW5pcXVlLCw=,r=" + nonce + "," + proof, ErrorCode::kMalformed},
        {"c=biws,x=" + nonce + "," + proof, ErrorCode::kMalformed},
        {"c=biws,r=" + nonce + ",p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ",
         ErrorCode::kMalformed},
        {"c=biws,r=" + nonce + ",p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVR=",
         ErrorCode::kMalformed},
        {"c=biws,r=" + nonce + ",p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ==",
         ErrorCode::kMalformed},
        {"c=biws,r=" + nonce + ",p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7And",
         ErrorCode::kMalformed},
        {"c=biws,r=" + nonce + ",p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=x",
         ErrorCode::kMalformed},
        {"c=biws,r=" + nonce + ",p=dHzbZapW Ik4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ",
         ErrorCode::kMalformed},
        {"c=biws,r=" + nonce + ",r=" + nonce + "," + proof, ErrorCode::kMalformed},
        {"c=biws,r=" + nonce + ",x," + proof, ErrorCode::kMalformed},
        {"c=biws,r=" + nonce + "," + proof + ",x=ext", ErrorCode::kMalformed},
        {"c=biws,r=" + nonce + ",x=" + std::string(kMessageBytesMax, 'a') + "," + proof,
         ErrorCode::kMalformed},
        {"c=biws,r=" + nonce + "x," + proof, ErrorCode::kNonceMismatch},
        {"c=biws,r=" + nonce.substr(1) + "," + proof, ErrorCode::kNonceMismatch},
        {"c=biws,r=," + proof, ErrorCode::kNonceMismatch},
    };
    for (const MalformedCase& c : cases) {
        INFO(c.message.substr(0, 120));
        ServerExchange server = rfc_server_exchange();
        Result<std::string, Error> refused = server.client_final(c.message);
        REQUIRE_FALSE(refused.ok());
        CHECK(refused.error().code == c.code);
        CHECK_FALSE(server.succeeded());
    }
}

TEST_CASE("a client-final-message with an extension before the proof is judged on its proof",
          "[scram]") {
    // The extension is part of the AuthMessage, so the RFC's proof no longer fits: what matters
    // is that the message parses and reaches the proof check.
    const std::string message =
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,x=1,"
        "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    ServerExchange server = rfc_server_exchange();
    Result<std::string, Error> refused = server.client_final(message);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ErrorCode::kWrongPassword);
}

TEST_CASE("malformed server-first-messages are refused", "[scram]") {
    const std::string nonce = "r=" + std::string(kRfcClientNonce) + "abc";
    const std::vector<MalformedCase> cases = {
        {"", ErrorCode::kMalformed},
        {nonce, ErrorCode::kMalformed},
        {nonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ==", ErrorCode::kMalformed},
        {nonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=", ErrorCode::kMalformed},
        {nonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=04096", ErrorCode::kMalformed},
        {nonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=+4096", ErrorCode::kMalformed},
        {nonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096x", ErrorCode::kMalformed},
        {nonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=99999999999999999999", ErrorCode::kMalformed},
        {nonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ,i=4096", ErrorCode::kMalformed},
        {nonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ=,i=4096", ErrorCode::kMalformed},
        {nonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ==x,i=4096", ErrorCode::kMalformed},
        {nonce + ",s=W22ZaJ0SNY7soEsUEjb6g!==,i=4096", ErrorCode::kMalformed},
        {nonce + ",i=4096,s=W22ZaJ0SNY7soEsUEjb6gQ==", ErrorCode::kMalformed},
        {"s=W22ZaJ0SNY7soEsUEjb6gQ==," + nonce + ",i=4096", ErrorCode::kMalformed},
        {nonce + " ,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", ErrorCode::kMalformed},
        {nonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,", ErrorCode::kMalformed},
        {nonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,i=1", ErrorCode::kMalformed},
        {nonce + std::string(kMessageBytesMax, 'a') + ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
         ErrorCode::kMalformed},
        {nonce + ",s=,i=4096", ErrorCode::kUnsupported},
        {nonce + ",s=AAAAAAAAAA==,i=4096", ErrorCode::kUnsupported},  // 7 bytes
        {nonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4095", ErrorCode::kUnsupported},
        {nonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=100001", ErrorCode::kUnsupported},
        {nonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4294967296", ErrorCode::kUnsupported},
        {"m=must," + nonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", ErrorCode::kUnsupported},
    };
    for (const MalformedCase& c : cases) {
        INFO(c.message.substr(0, 120));
        ClientExchange client = rfc_client_exchange();
        Result<std::string, Error> refused = client.server_first(c.message);
        REQUIRE_FALSE(refused.ok());
        CHECK(refused.error().code == c.code);
    }
}

TEST_CASE("malformed server-final-messages are refused", "[scram]") {
    const std::vector<MalformedCase> cases = {
        {"", ErrorCode::kMalformed},
        {"v=", ErrorCode::kMalformed},
        {"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4", ErrorCode::kMalformed},
        {"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=,", ErrorCode::kMalformed},
        {"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=,v=x", ErrorCode::kMalformed},
        {"x=1,v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=", ErrorCode::kMalformed},
        {"e=", ErrorCode::kMalformed},
        {"e=bad reason", ErrorCode::kMalformed},
        {"e=line\nbreak", ErrorCode::kMalformed},
        {"v=" + std::string(kMessageBytesMax, 'A'), ErrorCode::kMalformed},
        {"e=other-error,x=1", ErrorCode::kServerError},
        {"v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", ErrorCode::kBadServerSignature},
    };
    for (const MalformedCase& c : cases) {
        INFO(c.message.substr(0, 120));
        ClientExchange client = rfc_client_exchange();
        REQUIRE(client.server_first(kRfcServerFirst).ok());
        Result<std::monostate, Error> refused = client.server_final(c.message);
        REQUIRE_FALSE(refused.ok());
        CHECK(refused.error().code == c.code);
        CHECK_FALSE(client.succeeded());
    }
    // An extension after the signature is ignored.
    ClientExchange client = rfc_client_exchange();
    REQUIRE(client.server_first(kRfcServerFirst).ok());
    CHECK(client.server_final(std::string(kRfcServerFinal) + ",x=1").ok());
}

TEST_CASE("password_matches tells the verifier's password from others", "[scram]") {
    CHECK(password_matches(rfc_verifier(), "pencil"));
    CHECK_FALSE(password_matches(rfc_verifier(), "pencil "));
    CHECK_FALSE(password_matches(rfc_verifier(), "Pencil"));
    CHECK_FALSE(password_matches(rfc_verifier(), ""));
    const Verifier empty = make_verifier("", "salt1234", kIterationsMin);
    CHECK(password_matches(empty, ""));
    CHECK_FALSE(password_matches(empty, "pencil"));
}

TEST_CASE("verifiers are valid within the bounds only", "[scram]") {
    CHECK(valid_verifier(rfc_verifier()));
    Verifier v = rfc_verifier();
    v.iterations = kIterationsMin - 1;
    CHECK_FALSE(valid_verifier(v));
    v.iterations = kIterationsMax + 1;
    CHECK_FALSE(valid_verifier(v));
    v.iterations = kIterationsMax;
    CHECK(valid_verifier(v));
    v.salt = std::string(kSaltBytesMin - 1, 's');
    CHECK_FALSE(valid_verifier(v));
    v.salt = std::string(kSaltBytesMax + 1, 's');
    CHECK_FALSE(valid_verifier(v));
    v.salt = std::string(kSaltBytesMax, 's');
    CHECK(valid_verifier(v));
    CHECK(Verifier{} == Verifier{});
    CHECK_FALSE(valid_verifier(Verifier{}));
}

TEST_CASE("decoy verifiers are deterministic, look real and match no password", "[scram]") {
    const Verifier decoy = decoy_verifier("mallory", kTestServerSecret);
    CHECK(decoy == decoy_verifier("mallory", kTestServerSecret));
    CHECK(valid_verifier(decoy));
    CHECK(decoy.salt.size() == kSaltBytes);
    CHECK(decoy.iterations == kIterationsMin);
    CHECK(decoy.salt != decoy_verifier("mallory2", kTestServerSecret).salt);
    CHECK(decoy.salt != decoy_verifier("mallory", "another secret of 32 bytes......").salt);
    CHECK(decoy.stored_key != decoy.server_key);
    const std::vector<std::string_view> passwords = {"", "pencil", "mallory", kTestServerSecret,
                                                     std::string_view("\0", 1)};
    for (const std::string_view password : passwords) {
        CHECK_FALSE(password_matches(decoy, password));
    }

    // An exchange against a decoy ends as one with a wrong password does.
    ClientExchange client("mallory", "pencil", "clientnonce");
    Result<ClientFirst, Error> first = parse_client_first(client.client_first());
    REQUIRE(first.ok());
    ServerExchange server(std::move(first).value(), decoy, "servernonce");
    Result<std::string, Error> client_final = client.server_first(server.server_first());
    REQUIRE(client_final.ok());
    Result<std::string, Error> refused = server.client_final(*client_final);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ErrorCode::kWrongPassword);
    CHECK(refused.error().message == "wrong password");
}

TEST_CASE("an empty user name parses: libpq sends none, the port decides", "[scram]") {
    auto parsed = parse_client_first("n,,n=,r=rOprNGfwEbeRWgbNEkqO");
    REQUIRE(parsed.ok());
    CHECK(parsed->user.empty());
    CHECK(parsed->client_nonce == "rOprNGfwEbeRWgbNEkqO");
}

TEST_CASE("user names with ',' and '=' survive the escaping", "[scram]") {
    ClientExchange client("a,b=c", "pw", "nonce");
    CHECK(client.client_first() == "n,,n=a=2Cb=3Dc,r=nonce");
    for (const std::string user : {"a,b=c", ",", "=", "=2C", "=3D", ",,==", "plain", "zoë"}) {
        INFO(user);
        Result<ClientFirst, Error> parsed =
            parse_client_first(ClientExchange(user, "pw", "nonce").client_first());
        REQUIRE(parsed.ok());
        CHECK(parsed->user == user);
    }
}

TEST_CASE("random nonces and bytes have the promised shape", "[scram]") {
    const std::string a = random_nonce();
    const std::string b = random_nonce();
    CHECK(a.size() == 24);
    CHECK(a != b);
    for (const char c : a) {
        CHECK((c > 0x20 && c < 0x7f && c != ',' && c != '='));
    }
    CHECK(random_bytes(0).empty());
    CHECK(random_bytes(kSaltBytes).size() == kSaltBytes);
}

}  // namespace
}  // namespace raftlock::base::scram
