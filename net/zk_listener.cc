#include "net/zk_listener.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "base/assert.h"
#include "net/frame.h"

namespace raftlock::net {

namespace {

// The words ZooKeeper's four-letter-word commands use (FourLetterCommands.java): the listener
// recognises them all, and the handler decides which it answers.
constexpr std::array<std::string_view, 18> kFourLetterWords = {
    "conf", "cons", "crst", "dirs", "dump", "envi", "gtmk", "hash", "isro",
    "mntr", "ruok", "srst", "srvr", "stat", "stmk", "wchc", "wchp", "wchs",
};

StreamListenerOptions stream_options(const ZkListenerOptions& o) {
    StreamListenerOptions s;
    s.name = "zookeeper port";
    s.listen_host = o.listen_host;
    s.listen_port = o.listen_port;
    s.send_queue_bytes_max = o.send_queue_bytes_max;
    s.connections_max = o.connections_max;
    s.message_deadline_ms = o.message_deadline_ms;
    s.budget = o.budget;
    s.tls = o.tls;
    s.first_id = kZkConnectionBit | 1;
    return s;
}

}  // namespace

class ZkListener::Impl final : public StreamProtocol {
public:
    Impl(boost::asio::io_context& io, ZkListenerOptions options, ZkHandler& handler)
        : io_(io),
          max_message_bytes_(options.max_message_bytes),
          handler_(handler),
          stream_(io, stream_options(options), *this) {
        RL_ASSERT(max_message_bytes_ > 0);
    }

    void on_open(ConnectionId id, const std::string& remote) override {
        // The handler hears of it once its first bytes show it is not a four-letter word.
        auto [it, inserted] = inputs_.emplace(id, Input{FrameDecoder(max_message_bytes_), remote});
        RL_ASSERT(inserted);
    }

    void on_bytes(ConnectionId id, std::string_view bytes) override {
        auto it = inputs_.find(id);
        RL_ASSERT(it != inputs_.end());
        Input& in = it->second;
        in.decoder.feed(bytes);
        if (!in.opened) {
            in.first_bytes.append(bytes.substr(0, 4 - in.first_bytes.size()));
            if (in.first_bytes.size() < 4) {
                return;
            }
            if (std::find(kFourLetterWords.begin(), kFourLetterWords.end(), in.first_bytes) !=
                kFourLetterWords.end()) {
                answer_four_letter_word(id, in.first_bytes);
                return;
            }
            in.opened = true;
            in.first_bytes.clear();
            handler_.on_zk_open(id, in.remote);
        }
        drain(id);
    }

    void on_close(ConnectionId id) override {
        auto it = inputs_.find(id);
        const bool opened = it != inputs_.end() && it->second.opened;
        inputs_.erase(id);
        closing_.erase(id);
        if (opened) {
            handler_.on_zk_close(id);
        }
    }

    // Only a message the client is still sending counts: whole messages held back while the
    // handler has the connection paused wait for the server, not the client.
    size_t partial_bytes(ConnectionId id) const override {
        auto it = inputs_.find(id);
        if (it == inputs_.end() || it->second.held) {
            return 0;
        }
        return it->second.decoder.buffered_bytes();
    }

    // ZooKeeper drops a connection beyond maxClientCnxns without a word.
    std::string refusal(size_t) const override { return {}; }

    void answer_four_letter_word(ConnectionId id, std::string_view word) {
        if (std::optional<std::string> text = handler_.on_zk_four_letter_word(word)) {
            stream_.send(id, std::move(*text));
        }
        close(id, true);
    }

    // Hands the handler every whole message, in order, until none is left or the connection is
    // paused or closing.
    void drain(ConnectionId id) {
        for (;;) {
            auto it = inputs_.find(id);
            if (stopped_ || it == inputs_.end() || closing_.contains(id)) {
                return;
            }
            Input& in = it->second;
            if (in.paused) {
                in.held = true;  // may hold whole messages: handed over on resume
                return;
            }
            std::string_view payload;
            switch (in.decoder.next(payload)) {
                case FrameDecoder::State::kNeedMore:
                    in.held = false;
                    return;
                case FrameDecoder::State::kTooLarge:
                    // ZooKeeper: "Len error", and the connection closes.
                    stream_.count_protocol_error();
                    close(id, false);
                    return;
                case FrameDecoder::State::kFrame:
                    break;
            }
            handler_.on_zk_message(id, payload);
        }
    }

    void pause_reading(ConnectionId id, bool paused) {
        auto it = inputs_.find(id);
        if (it != inputs_.end()) {
            Input& in = it->second;
            in.paused = paused;
            // Not from here: the handler may be calling from inside its own on_zk_message.
            if (!paused && in.held && !in.drain_posted && !stopped_) {
                in.drain_posted = true;
                boost::asio::post(io_, [this, id, alive = std::weak_ptr<int>(alive_)] {
                    if (alive.expired() || stopped_) {
                        return;
                    }
                    if (auto found = inputs_.find(id); found != inputs_.end()) {
                        found->second.drain_posted = false;
                        drain(id);
                    }
                });
            }
        }
        stream_.pause_reading(id, paused);
    }

    void close(ConnectionId id, bool flush) {
        if (inputs_.contains(id)) {
            closing_.insert(id);
        }
        stream_.close(id, flush);
    }

    void stop() {
        stopped_ = true;
        stream_.stop();
    }

    struct Input {
        FrameDecoder decoder;
        std::string remote;
        std::string first_bytes;  // until four have come: a four-letter word, or a length
        bool opened = false;      // the handler knows of it (on_zk_open)
        bool paused = false;
        bool held = false;          // paused with bytes not yet handed over
        bool drain_posted = false;  // a drain after resuming is queued on the io_context
    };

    boost::asio::io_context& io_;
    uint32_t max_message_bytes_;
    ZkHandler& handler_;
    std::map<ConnectionId, Input> inputs_;
    std::set<ConnectionId> closing_;
    bool stopped_ = false;
    // Posted drains hold a weak reference: one that runs after the listener is gone does nothing.
    std::shared_ptr<int> alive_ = std::make_shared<int>(0);
    StreamListener stream_;
};

ZkListener::ZkListener(boost::asio::io_context& io, ZkListenerOptions options, ZkHandler& handler)
    : impl_(std::make_unique<Impl>(io, std::move(options), handler)) {}

ZkListener::~ZkListener() = default;

Result<bool, std::string> ZkListener::start() {
    return impl_->stream_.start();
}

uint16_t ZkListener::port() const {
    return impl_->stream_.port();
}

void ZkListener::send(ConnectionId id, std::string bytes) {
    impl_->stream_.send(id, std::move(bytes));
}

void ZkListener::close(ConnectionId id, bool flush) {
    impl_->close(id, flush);
}

void ZkListener::pause_reading(ConnectionId id, bool paused) {
    impl_->pause_reading(id, paused);
}

bool ZkListener::is_open(ConnectionId id) const {
    return impl_->stream_.is_open(id);
}

void ZkListener::set_tls(std::shared_ptr<const TlsContext> tls) {
    impl_->stream_.set_tls(std::move(tls));
}

void ZkListener::stop() {
    impl_->stop();
}

StreamListenerStats ZkListener::stats() const {
    return impl_->stream_.stats();
}

}  // namespace raftlock::net
