#include "net/tls.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include <catch2/catch.hpp>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

namespace raftlock::net::tls_test {
namespace {

// --- certificates minted for the test, written as PEM files -------------------------------------

struct KeyFree {
    void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
    void operator()(X509* c) const { X509_free(c); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;

struct Issued {
    Key key;
    Cert cert;
};

void add_extension(X509* cert, X509* issuer, int nid, const char* value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    REQUIRE(ext != nullptr);
    REQUIRE(X509_add_ext(cert, ext, -1) == 1);
    X509_EXTENSION_free(ext);
}

// A P-256 key and a certificate for `common_name`, signed by `issuer` (self-signed without one),
// valid from `from_s` to `until_s` seconds from now, with the SANs given (e.g. "DNS:localhost").
Issued issue(const std::string& common_name,
             const Issued* issuer,
             const char* sans,
             long from_s = -3600,
             long until_s = 86400) {
    static long serial = 1;
    Issued out{Key(EVP_EC_gen("P-256")), Cert(X509_new())};
    REQUIRE(out.key != nullptr);
    X509* cert = out.cert.get();
    REQUIRE(X509_set_version(cert, 2) == 1);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), serial++);
    X509_gmtime_adj(X509_getm_notBefore(cert), from_s);
    X509_gmtime_adj(X509_getm_notAfter(cert), until_s);
    REQUIRE(X509_set_pubkey(cert, out.key.get()) == 1);
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                               reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                               0);
    X509* signer = issuer != nullptr ? issuer->cert.get() : cert;
    REQUIRE(X509_set_issuer_name(cert, X509_get_subject_name(signer)) == 1);
    if (issuer == nullptr) {
        add_extension(cert, signer, NID_basic_constraints, "critical,CA:TRUE");
        add_extension(cert, signer, NID_key_usage, "critical,keyCertSign,cRLSign");
    } else {
        add_extension(cert, signer, NID_basic_constraints, "critical,CA:FALSE");
    }
    if (sans != nullptr) {
        add_extension(cert, signer, NID_subject_alt_name, sans);
    }
    EVP_PKEY* signing_key = issuer != nullptr ? issuer->key.get() : out.key.get();
    REQUIRE(X509_sign(cert, signing_key, EVP_sha256()) > 0);
    return out;
}

class Files {
public:
    Files() {
        char pattern[] = "/tmp/raftlock-tls-test.XXXXXX";
        REQUIRE(mkdtemp(pattern) != nullptr);
        dir_ = pattern;
    }
    ~Files() { std::filesystem::remove_all(dir_); }

    std::string cert(const std::string& name, const Issued& issued) {
        const std::string path = dir_ + "/" + name + ".crt";
        FILE* f = std::fopen(path.c_str(), "w");
        REQUIRE(f != nullptr);
        REQUIRE(PEM_write_X509(f, issued.cert.get()) == 1);
        std::fclose(f);
        return path;
    }
    std::string key(const std::string& name, const Issued& issued) {
        const std::string path = dir_ + "/" + name + ".key";
        FILE* f = std::fopen(path.c_str(), "w");
        REQUIRE(f != nullptr);
        REQUIRE(PEM_write_PrivateKey(f, issued.key.get(), nullptr, nullptr, 0, nullptr, nullptr) ==
                1);
        std::fclose(f);
        return path;
    }
    std::string text(const std::string& name, const std::string& content) {
        const std::string path = dir_ + "/" + name;
        FILE* f = std::fopen(path.c_str(), "w");
        REQUIRE(f != nullptr);
        std::fputs(content.c_str(), f);
        std::fclose(f);
        return path;
    }

private:
    std::string dir_;
};

// A CA, a server certificate for localhost and 127.0.0.1, and a client certificate "alice".
struct Pki {
    Files files;
    Issued ca = issue("raftlock test CA", nullptr, nullptr);
    Issued server = issue("node 1", &ca, "DNS:localhost,IP:127.0.0.1");
    Issued client = issue("alice", &ca, nullptr);
    std::string ca_file = files.cert("ca", ca);

    std::shared_ptr<const TlsContext> server_context(bool require_client_certificate = false) {
        return context({.role = TlsRole::kServer,
                        .cert_file = files.cert("server", server),
                        .key_file = files.key("server", server),
                        .ca_file = require_client_certificate ? ca_file : "",
                        .require_client_certificate = require_client_certificate});
    }
    std::shared_ptr<const TlsContext> client_context(bool with_certificate = false) {
        TlsContextOptions o{.role = TlsRole::kClient, .ca_file = ca_file};
        if (with_certificate) {
            o.cert_file = files.cert("client", client);
            o.key_file = files.key("client", client);
        }
        return context(o);
    }
    static std::shared_ptr<const TlsContext> context(const TlsContextOptions& options) {
        auto made = TlsContext::make(options);
        INFO((made.ok() ? std::string() : made.error()));
        REQUIRE(made.ok());
        return *made;
    }
};

// --- two sessions talking through memory -----------------------------------------------------

struct Link {
    TlsSession client;
    TlsSession server;
    std::string client_got;
    std::string server_got;
    std::string client_error;
    std::string server_error;

    Link(std::shared_ptr<const TlsContext> client_context,
         std::shared_ptr<const TlsContext> server_context,
         std::string_view server_name = "localhost")
        : client(std::move(client_context), server_name), server(std::move(server_context)) {
        REQUIRE(client.start().ok());
        REQUIRE(server.start().ok());
    }

    // Moves bytes both ways, `chunk` bytes at a time, until neither side has anything to send.
    void pump(size_t chunk = 1 << 20) {
        for (int round = 0; round < 100; ++round) {
            const std::string to_server = client.take_output();
            const std::string to_client = server.take_output();
            if (to_server.empty() && to_client.empty()) {
                return;
            }
            deliver(to_server, server, server_got, server_error, chunk);
            deliver(to_client, client, client_got, client_error, chunk);
        }
        FAIL("the sessions kept talking");
    }

    static void deliver(const std::string& bytes,
                        TlsSession& to,
                        std::string& got,
                        std::string& error,
                        size_t chunk) {
        for (size_t at = 0; at < bytes.size() && error.empty(); at += chunk) {
            auto r = to.feed(std::string_view(bytes).substr(at, chunk), got);
            if (!r.ok()) {
                error = r.error();
            }
        }
    }
};

TEST_CASE("a TLS handshake in memory carries bytes both ways", "[tls]") {
    Pki pki;
    Link link(pki.client_context(), pki.server_context());
    // Written before the handshake: held until it completes.
    REQUIRE(link.client.write("ping").ok());
    link.pump();
    REQUIRE(link.client_error.empty());
    REQUIRE(link.server_error.empty());
    CHECK(link.client.handshake_done());
    CHECK(link.server.handshake_done());
    CHECK(link.client.protocol() == "TLSv1.3");
    CHECK(link.server_got == "ping");
    // The server verified nobody (no client certificate asked for); the client verified "node 1".
    CHECK_FALSE(link.server.peer_common_name().has_value());
    CHECK(link.client.peer_common_name() == "node 1");

    // Larger than one record (16 KiB), fed a few bytes at a time.
    std::string big(100'000, '\0');
    for (size_t i = 0; i < big.size(); ++i) {
        big[i] = static_cast<char>(i * 31 % 251);
    }
    REQUIRE(link.server.write(big).ok());
    link.pump(7);
    CHECK(link.client_got == big);

    link.client.shutdown();
    link.pump();
    CHECK(link.server.peer_closed());
}

TEST_CASE("the server's name is checked: a name or address the certificate lacks is refused",
          "[tls]") {
    Pki pki;
    SECTION("by address") {
        Link link(pki.client_context(), pki.server_context(), "127.0.0.1");
        link.pump();
        CHECK(link.client_error.empty());
        CHECK(link.client.handshake_done());
    }
    SECTION("another name") {
        Link link(pki.client_context(), pki.server_context(), "db.example.com");
        link.pump();
        CHECK_THAT(link.client_error,
                   Catch::Contains("certificate verify failed") && Catch::Contains("mismatch"));
        CHECK_FALSE(link.client.handshake_done());
        // The client's alert tells the server why.
        CHECK_FALSE(link.server_error.empty());
    }
    SECTION("another address") {
        Link link(pki.client_context(), pki.server_context(), "127.0.0.2");
        link.pump();
        CHECK_THAT(link.client_error, Catch::Contains("IP address mismatch"));
    }
}

// What a client trusting the test CA says of a server that presents `issued`.
std::string client_error_against(Pki& pki, const std::string& name, const Issued& issued) {
    auto server = Pki::context({.role = TlsRole::kServer,
                                .cert_file = pki.files.cert(name, issued),
                                .key_file = pki.files.key(name, issued)});
    Link link(pki.client_context(), server);
    link.pump();
    return link.client_error;
}

TEST_CASE("a server certificate from another CA, or expired, is refused", "[tls]") {
    Pki pki;
    SECTION("another CA") {
        Issued other_ca = issue("another CA", nullptr, nullptr);
        Issued impostor = issue("node 1", &other_ca, "DNS:localhost");
        CHECK_THAT(client_error_against(pki, "impostor", impostor),
                   Catch::Contains("unable to get local issuer certificate"));
    }
    SECTION("expired") {
        Issued old = issue("node 1", &pki.ca, "DNS:localhost", -7200, -3600);
        CHECK_THAT(client_error_against(pki, "old", old),
                   Catch::Contains("certificate has expired"));
    }
}

TEST_CASE("mutual TLS: the server names the client by its certificate, or refuses it", "[tls]") {
    Pki pki;
    SECTION("a client certificate of the CA") {
        Link link(pki.client_context(true), pki.server_context(true));
        REQUIRE(link.client.write("hello").ok());
        link.pump();
        REQUIRE(link.server_error.empty());
        CHECK(link.server.peer_common_name() == "alice");
        CHECK(link.server_got == "hello");
    }
    SECTION("no client certificate") {
        Link link(pki.client_context(false), pki.server_context(true));
        REQUIRE(link.client.write("hello").ok());
        link.pump();
        CHECK_THAT(link.server_error, Catch::Contains("peer did not return a certificate"));
        // TLS 1.3: the client finished first and hears of it from the server's alert.
        CHECK_FALSE(link.client_error.empty());
        CHECK(link.server_got.empty());
    }
    SECTION("a client certificate of another CA") {
        Issued other_ca = issue("another CA", nullptr, nullptr);
        Issued mallory = issue("alice", &other_ca, nullptr);
        auto client = Pki::context({.role = TlsRole::kClient,
                                    .cert_file = pki.files.cert("mallory", mallory),
                                    .key_file = pki.files.key("mallory", mallory),
                                    .ca_file = pki.ca_file});
        Link link(client, pki.server_context(true));
        REQUIRE(link.client.write("hello").ok());
        link.pump();
        CHECK_THAT(link.server_error, Catch::Contains("certificate verify failed"));
        CHECK(link.server_got.empty());
    }
}

TEST_CASE("plain text or garbage on a TLS port fails the handshake with a reason", "[tls]") {
    Pki pki;
    TlsSession server(pki.server_context());
    REQUIRE(server.start().ok());
    std::string got;
    auto r = server.feed("GET / HTTP/1.1\r\nHost: x\r\n\r\n", got);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error(), Catch::StartsWith("TLS handshake failed"));
    CHECK(got.empty());
    // Once failed, always failed, with the first reason.
    CHECK(server.feed("more", got).error() == r.error());
    CHECK_FALSE(server.write("reply").ok());
}

TEST_CASE("a server name OpenSSL cannot send fails the client session at start", "[tls]") {
    Pki pki;
    TlsSession client(pki.client_context(), std::string(300, 'a'));  // SNI allows 255 bytes
    const Result<bool, std::string> started = client.start();
    REQUIRE_FALSE(started.ok());
    CHECK_THAT(started.error(), Catch::StartsWith("cannot check the server name"));
    CHECK(client.take_output().empty());
}

TEST_CASE("a context's files are checked when it is made, with the file named", "[tls]") {
    Pki pki;
    const std::string cert = pki.files.cert("server", pki.server);
    const std::string key = pki.files.key("server", pki.server);
    SECTION("a missing certificate file") {
        auto made = TlsContext::make(
            {.role = TlsRole::kServer, .cert_file = "/nonexistent/node.crt", .key_file = key});
        REQUIRE_FALSE(made.ok());
        CHECK_THAT(made.error(), Catch::Contains("/nonexistent/node.crt"));
    }
    SECTION("a key that is not the certificate's") {
        const std::string other = pki.files.key("client", pki.client);
        auto made =
            TlsContext::make({.role = TlsRole::kServer, .cert_file = cert, .key_file = other});
        REQUIRE_FALSE(made.ok());
        CHECK_THAT(made.error(), Catch::Contains("client.key") && Catch::Contains("mismatch"));
    }
    SECTION("a CA file that holds no certificate") {
        auto made = TlsContext::make(
            {.role = TlsRole::kClient, .ca_file = pki.files.text("empty.crt", "not a PEM\n")});
        REQUIRE_FALSE(made.ok());
        CHECK_THAT(made.error(), Catch::Contains("empty.crt"));
    }
    SECTION("a server without a key, a client certificate without a CA to check it") {
        CHECK_FALSE(TlsContext::make({.role = TlsRole::kServer, .cert_file = cert}).ok());
        CHECK_FALSE(TlsContext::make({.role = TlsRole::kServer,
                                      .cert_file = cert,
                                      .key_file = key,
                                      .require_client_certificate = true})
                        .ok());
    }
}

}  // namespace
}  // namespace raftlock::net::tls_test
