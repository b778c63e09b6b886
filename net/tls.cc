#include "net/tls.h"

#include <array>
#include <climits>
#include <utility>

#include <fmt/format.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "base/assert.h"

namespace raftlock::net {

namespace {

// OpenSSL's queued reasons for the last failure, oldest first, and the queue cleared. The queue
// is per thread: every operation clears it first, so what is here is this session's.
std::string drain_errors() {
    std::string reasons;
    while (const unsigned long code = ERR_get_error()) {
        std::array<char, 256> text{};
        ERR_error_string_n(code, text.data(), text.size());
        if (!reasons.empty()) {
            reasons += "; ";
        }
        reasons += text.data();
    }
    return reasons;
}

std::string file_error(std::string_view what, const std::string& file) {
    const std::string reasons = drain_errors();
    return fmt::format("cannot use {} {}: {}", what, file,
                       reasons.empty() ? "no reason given by OpenSSL" : reasons);
}

}  // namespace

Result<std::shared_ptr<const TlsContext>, std::string> TlsContext::make(
    const TlsContextOptions& options) {
    const bool server = options.role == TlsRole::kServer;
    if (server && (options.cert_file.empty() || options.key_file.empty())) {
        return std::string("a TLS server needs a certificate file and a key file");
    }
    if (options.cert_file.empty() != options.key_file.empty()) {
        return std::string("a TLS certificate file and a key file come together");
    }
    if (options.require_client_certificate && (!server || options.ca_file.empty())) {
        return std::string("requiring client certificates needs a server with a CA file");
    }
    ERR_clear_error();
    SSL_CTX* ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
    if (ctx == nullptr) {
        return "cannot make a TLS context: " + drain_errors();
    }
    // From here every early return frees ctx through the context it is given to.
    std::shared_ptr<const TlsContext> context(new TlsContext(ctx, options.role));
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
        return "cannot require TLS 1.2: " + drain_errors();
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
    // No TLS 1.3 session tickets: no client of ours resumes a session, and without them a
    // server's handshake ends with its one flight (nothing arrives after it unasked).
    if (server && SSL_CTX_set_num_tickets(ctx, 0) != 1) {
        return "cannot turn session tickets off: " + drain_errors();
    }
    if (!options.cert_file.empty()) {
        if (SSL_CTX_use_certificate_chain_file(ctx, options.cert_file.c_str()) != 1) {
            return file_error("the certificate file", options.cert_file);
        }
        if (SSL_CTX_use_PrivateKey_file(ctx, options.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
            return file_error("the key file", options.key_file);
        }
        if (SSL_CTX_check_private_key(ctx) != 1) {
            return fmt::format("the key in {} does not match the certificate in {}",
                               options.key_file, options.cert_file);
        }
    }
    if (!options.ca_file.empty()) {
        if (SSL_CTX_load_verify_locations(ctx, options.ca_file.c_str(), nullptr) != 1) {
            return file_error("the CA file", options.ca_file);
        }
    } else if (!server && SSL_CTX_set_default_verify_paths(ctx) != 1) {
        return "cannot load the system's trusted CAs: " + drain_errors();
    }
    if (!server) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    } else if (options.require_client_certificate) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
        // Tell clients which CAs we accept, so one with several certificates picks the right one.
        STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(options.ca_file.c_str());
        if (names == nullptr) {
            return file_error("the CA file", options.ca_file);
        }
        SSL_CTX_set_client_CA_list(ctx, names);
    }
    return context;
}

TlsContext::~TlsContext() {
    SSL_CTX_free(ctx_);
}

TlsSession::TlsSession(std::shared_ptr<const TlsContext> context, std::string_view server_name)
    : context_(std::move(context)) {
    RL_ASSERT(context_ != nullptr);
    ERR_clear_error();
    ssl_ = SSL_new(context_->ctx_);
    in_ = BIO_new(BIO_s_mem());
    out_ = BIO_new(BIO_s_mem());
    RL_ASSERT_MSG(ssl_ != nullptr && in_ != nullptr && out_ != nullptr,
                  "OpenSSL could not allocate a TLS session");
    // An empty input buffer means "wait for more", not end of file.
    BIO_set_mem_eof_return(in_, -1);
    SSL_set_bio(ssl_, in_, out_);
    if (context_->role() == TlsRole::kServer) {
        RL_ASSERT(server_name.empty());
        SSL_set_accept_state(ssl_);
        return;
    }
    SSL_set_connect_state(ssl_);
    if (server_name.empty()) {
        return;
    }
    const std::string name(server_name);
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
    // An IP address is checked against the certificate's IP SANs; a name against its DNS SANs
    // (and sent as SNI, which RFC 6066 forbids for addresses).
    if (X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str()) == 1) {
        return;
    }
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    // The name comes from the user (an endpoint's host): refused, it fails the session at start.
    if (SSL_set1_host(ssl_, name.c_str()) != 1 ||
        SSL_set_tlsext_host_name(ssl_, name.c_str()) != 1) {
        failed_ = true;
        error_ = fmt::format("cannot check the server name {}: {}", name, drain_errors());
    }
}

TlsSession::~TlsSession() {
    SSL_free(ssl_);  // and both buffers with it
}

std::unique_ptr<TlsSession> TlsSession::start_server(std::shared_ptr<const TlsContext> context) {
    RL_ASSERT(context != nullptr && context->role() == TlsRole::kServer);
    auto session = std::make_unique<TlsSession>(std::move(context));
    const Result<bool, std::string> started = session->start();
    RL_ASSERT_MSG(started.ok(), "a TLS server session failed before its first byte");
    return session;
}

Result<bool, std::string> TlsSession::start() {
    RL_ASSERT(!started_);
    started_ = true;
    if (failed_) {
        return error_;
    }
    if (context_->role() == TlsRole::kClient) {
        std::string none;
        // The ClientHello goes to the output buffer.
        if (Result<bool, std::string> r = advance(none); !r.ok()) {
            return r;
        }
        RL_ASSERT(none.empty());
    }
    return true;
}

Result<bool, std::string> TlsSession::feed(std::string_view ciphertext, std::string& plaintext) {
    RL_ASSERT(started_);
    if (failed_) {
        return error_;
    }
    RL_ASSERT(ciphertext.size() <= INT_MAX);
    if (!ciphertext.empty()) {
        const int n = BIO_write(in_, ciphertext.data(), static_cast<int>(ciphertext.size()));
        RL_ASSERT_MSG(n == static_cast<int>(ciphertext.size()), "a memory BIO refused bytes");
    }
    return advance(plaintext);
}

Result<bool, std::string> TlsSession::advance(std::string& plaintext) {
    ERR_clear_error();
    if (!handshake_done_) {
        const int r = SSL_do_handshake(ssl_);
        if (r != 1) {
            const int error = SSL_get_error(ssl_, r);
            if (error == SSL_ERROR_WANT_READ) {
                return true;  // the peer's next flight has not arrived whole
            }
            return failure("TLS handshake failed", error);
        }
        handshake_done_ = true;
        if (!pending_.empty()) {
            std::string queued = std::move(pending_);
            pending_.clear();
            if (auto w = encrypt(queued); !w.ok()) {
                return w;
            }
        }
    }
    std::array<char, 16 * 1024> buffer;  // one record's worth per call
    while (!peer_closed_) {
        size_t n = 0;
        const int r = SSL_read_ex(ssl_, buffer.data(), buffer.size(), &n);
        if (r == 1) {
            plaintext.append(buffer.data(), n);
            continue;
        }
        const int error = SSL_get_error(ssl_, r);
        if (error == SSL_ERROR_WANT_READ) {
            break;
        }
        if (error == SSL_ERROR_ZERO_RETURN) {
            peer_closed_ = true;
            break;
        }
        return failure("TLS record failed", error);
    }
    return true;
}

Result<bool, std::string> TlsSession::write(std::string_view plaintext) {
    RL_ASSERT(started_);
    if (failed_) {
        return error_;
    }
    if (!handshake_done_) {
        pending_.append(plaintext);
        return true;
    }
    return encrypt(plaintext);
}

Result<bool, std::string> TlsSession::encrypt(std::string_view plaintext) {
    RL_ASSERT(handshake_done_);
    ERR_clear_error();
    while (!plaintext.empty()) {
        size_t n = 0;
        const int r = SSL_write_ex(ssl_, plaintext.data(), plaintext.size(), &n);
        if (r != 1) {
            return failure("TLS write failed", SSL_get_error(ssl_, r));
        }
        RL_ASSERT(n > 0 && n <= plaintext.size());
        plaintext.remove_prefix(n);
    }
    return true;
}

std::string TlsSession::take_output() {
    std::string out;
    const size_t pending = BIO_ctrl_pending(out_);
    if (pending == 0) {
        return out;
    }
    RL_ASSERT(pending <= INT_MAX);
    out.resize(pending);
    const int n = BIO_read(out_, out.data(), static_cast<int>(pending));
    RL_ASSERT_MSG(n == static_cast<int>(pending), "a memory BIO gave fewer bytes than it held");
    return out;
}

void TlsSession::shutdown() {
    if (failed_ || !handshake_done_) {
        return;  // nothing agreed to close politely
    }
    ERR_clear_error();
    (void)SSL_shutdown(ssl_);  // queues close_notify; the peer's answer is not awaited
    ERR_clear_error();
}

bool TlsSession::peer_certificate_names(std::string_view name) const {
    if (!handshake_done_) {
        return false;
    }
    X509* cert = SSL_get0_peer_certificate(ssl_);
    return cert != nullptr && X509_check_host(cert, name.data(), name.size(),
                                              X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS, nullptr) == 1;
}

std::optional<std::string> TlsSession::peer_common_name() const {
    if (!handshake_done_) {
        return std::nullopt;
    }
    X509* cert = SSL_get0_peer_certificate(ssl_);
    if (cert == nullptr) {
        return std::nullopt;
    }
    X509_NAME* subject = X509_get_subject_name(cert);
    const int index = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
    if (index < 0) {
        return std::nullopt;
    }
    const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index));
    unsigned char* utf8 = nullptr;
    const int length = ASN1_STRING_to_UTF8(&utf8, data);
    if (length < 0) {
        return std::nullopt;
    }
    std::string name(reinterpret_cast<const char*>(utf8), static_cast<size_t>(length));
    OPENSSL_free(utf8);
    return name;
}

std::string TlsSession::protocol() const {
    return handshake_done_ ? SSL_get_version(ssl_) : "";
}

std::string TlsSession::failure(std::string_view what, int ssl_error) {
    failed_ = true;
    std::string reasons = drain_errors();
    const long verify = SSL_get_verify_result(ssl_);
    if (verify != X509_V_OK) {
        // The certificate's fault is what an operator needs first ("certificate has expired").
        reasons =
            fmt::format("certificate verify failed: {}{}{}", X509_verify_cert_error_string(verify),
                        reasons.empty() ? "" : "; ", reasons);
    }
    if (reasons.empty()) {
        reasons = ssl_error == SSL_ERROR_SYSCALL ? "the peer ended the stream mid-record"
                                                 : fmt::format("OpenSSL error {}", ssl_error);
    }
    error_ = fmt::format("{}: {}", what, reasons);
    return error_;
}

}  // namespace raftlock::net
