#pragma once

// TLS for every listener and every outgoing connection (issue 18), as a byte-in, byte-out engine:
// a TlsSession owns one connection's OpenSSL state over two memory buffers and never touches a
// socket. The caller reads ciphertext from the network and feeds it in, gets plaintext out, hands
// plaintext in and sends the ciphertext it is given. So the listeners keep their own reading and
// writing (one shared read buffer, gathered writes, deadlines, limits: stream_listener.h), and a
// handshake can be tested between two sessions in memory.
//
// Policy, the same everywhere: TLS 1.2 or later, no renegotiation, the peer's certificate verified
// against the configured CA file (a client also checks the server's name against the certificate;
// a server that requires client certificates refuses a client without one). A certificate and
// key are read once, when the context is made: reloading (SIGHUP) is making a new context, which
// new connections use while open ones keep theirs.
//
// Threads: a context is immutable once made and may be shared; a session belongs to one thread.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

// OpenSSL's types, declared so that this header does not include OpenSSL's.
struct ssl_ctx_st;
struct ssl_st;
struct bio_st;

namespace raftlock::net {

enum class TlsRole { kServer, kClient };

struct TlsContextOptions {
    TlsRole role = TlsRole::kServer;
    // PEM files. A server needs its certificate chain and key; a client gives them only for
    // mutual TLS.
    std::string cert_file;
    std::string key_file;
    // The CAs the peer's certificate must chain to. A client without one uses the system's
    // trusted CAs; a server without one asks for no client certificate.
    std::string ca_file;
    // Server only: a client must present a certificate that chains to ca_file (mutual TLS).
    bool require_client_certificate = false;
};

class TlsContext {
public:
    // Reads and checks the files (the key must match the certificate); the error names the file
    // and OpenSSL's reason.
    static Result<std::shared_ptr<const TlsContext>, std::string> make(
        const TlsContextOptions& options);
    ~TlsContext();
    TlsContext(const TlsContext&) = delete;
    TlsContext& operator=(const TlsContext&) = delete;

    TlsRole role() const { return role_; }

private:
    friend class TlsSession;
    TlsContext(ssl_ctx_st* ctx, TlsRole role) : ctx_(ctx), role_(role) {}
    ssl_ctx_st* ctx_;
    TlsRole role_;
};

class TlsSession {
public:
    // A client names the server it expects (a DNS name or an IP address): sent as SNI (for a
    // name) and checked against the certificate's subject alternative names.
    TlsSession(std::shared_ptr<const TlsContext> context, std::string_view server_name = {});
    ~TlsSession();
    TlsSession(const TlsSession&) = delete;
    TlsSession& operator=(const TlsSession&) = delete;

    // A client's first flight (the ClientHello) is ready in take_output() after this; a server
    // starts by feeding what the client sent. A client fails here when OpenSSL refuses its
    // server name (longer than SNI allows, say); then the session is failed for good.
    Result<bool, std::string> start();
    // A started server session of `context` (role server), which waits for the client's first
    // flight: what every listener makes for a connection that speaks TLS.
    static std::unique_ptr<TlsSession> start_server(std::shared_ptr<const TlsContext> context);
    // Ciphertext from the network, in any pieces. Appends the plaintext it completes. An error
    // (a failed handshake, a record that does not decrypt, plain text on a TLS port) is final:
    // take_output() may still hold an alert for the peer, then the connection must close.
    Result<bool, std::string> feed(std::string_view ciphertext, std::string& plaintext);
    // Plaintext to send, encrypted now or, before the handshake completes, when it does.
    Result<bool, std::string> write(std::string_view plaintext);
    // Ciphertext to send (handshake messages, records, alerts), emptied by the call.
    std::string take_output();
    // Ends the session politely: a close_notify alert is queued in take_output().
    void shutdown();

    bool handshake_done() const { return handshake_done_; }
    // The peer sent close_notify: no more plaintext will come.
    bool peer_closed() const { return peer_closed_; }
    // After the handshake: the common name of the peer's verified certificate, if it sent one.
    std::optional<std::string> peer_common_name() const;
    // After the handshake: whether the peer's verified certificate names `name` (among its DNS
    // subject alternative names, or as its common name when it has none: OpenSSL's host check).
    bool peer_certificate_names(std::string_view name) const;
    // "TLSv1.3" or "TLSv1.2" after the handshake.
    std::string protocol() const;

private:
    Result<bool, std::string> advance(std::string& plaintext);
    Result<bool, std::string> encrypt(std::string_view plaintext);
    std::string failure(std::string_view what, int ssl_error);

    std::shared_ptr<const TlsContext> context_;
    ssl_st* ssl_ = nullptr;
    bio_st* in_ = nullptr;   // ciphertext fed, owned by ssl_
    bio_st* out_ = nullptr;  // ciphertext to send, owned by ssl_
    std::string pending_;    // plaintext written before the handshake completed
    bool started_ = false;
    bool handshake_done_ = false;
    bool peer_closed_ = false;
    bool failed_ = false;
    std::string error_;  // why the session failed, once it has
};

}  // namespace raftlock::net
