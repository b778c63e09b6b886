// Bad input on every port leaves the server serving everyone else.

#include <arpa/inet.h>
#include <catch2/catch.hpp>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/frame.h"
#include "process_cluster.h"
#include "raw_client.h"

namespace raftlock::integration {
namespace {

proto::Request node_status(uint64_t id) {
    proto::Request r;
    r.set_request_id(id);
    r.mutable_node_status();
    return r;
}

// A healthy client on the node, and the admin port answering.
void check_serving(ProcessCluster& c, uint64_t node) {
    RawConnection ok(c.ports(node).client);
    const proto::Response r = ok.call(node_status(7));
    CHECK(r.code() == proto::OK);
    CHECK(r.node_status().id() == node);
    std::string status_line;
    CHECK(http_get(c.ports(node).admin, "/healthz", &status_line).has_value());
}

TEST_CASE("garbage, oversized frames and half-open connections do not hurt other clients",
          "[integration][robustness]") {
    ProcessCluster c;
    const uint64_t leader = c.wait_for_leader();
    REQUIRE(leader != 0);
    for (uint64_t node : c.ids()) {
        // A half-open connection on every port, held for the whole test.
        RawConnection half_client(c.ports(node).client);
        half_client.send_bytes(std::string("\x00\x00\x01", 3));  // a partial header
        RawConnection half_raft(c.ports(node).raft);
        half_raft.send_bytes(std::string("\x00\x00", 2));
        RawConnection half_admin(c.ports(node).admin);
        half_admin.send_bytes("GET /sta");

        {  // garbage bytes on the client port: BAD_REQUEST and a close
            RawConnection bad(c.ports(node).client);
            std::string frame;
            net::append_frame(frame, "\xff\xfe this is not protobuf \x01\x02\x03");
            bad.send_bytes(frame);
            std::optional<proto::ServerMessage> m = bad.receive();
            REQUIRE(m.has_value());
            CHECK(m->response().code() == proto::BAD_REQUEST);
            CHECK(!m->response().message().empty());
            CHECK(bad.closed_by_server());
        }
        {  // an oversized frame is refused before its payload is read
            RawConnection big(c.ports(node).client);
            big.send_bytes(std::string("\x7f\xff\xff\xff", 4));
            std::optional<proto::ServerMessage> m = big.receive();
            REQUIRE(m.has_value());
            CHECK(m->response().code() == proto::BAD_REQUEST);
            CHECK(big.closed_by_server());
        }
        {  // garbage on the raft port closes only that connection
            RawConnection bad(c.ports(node).raft);
            bad.send_bytes(std::string(64, '\x41'));
            CHECK(bad.closed_by_server());
        }
        {  // garbage on the admin port: an error and a close
            RawConnection bad(c.ports(node).admin);
            bad.send_bytes("BLAH\x01\x02 / HTTP/9\r\n\r\n");
            CHECK(bad.closed_by_server());
        }
        check_serving(c, node);
    }
    // The cluster still commits: a write goes through.
    RawConnection w(c.ports(leader).client);
    proto::Request open;
    open.set_request_id(1);
    open.mutable_open_session()->set_timeout_ms(5000);
    CHECK(w.call(open).code() == proto::OK);
}

TEST_CASE("a node of another cluster is refused", "[integration][robustness]") {
    ProcessCluster c;
    REQUIRE(c.wait_for_leader() != 0);
    // Speak the peer protocol's Hello with a wrong cluster id: the node closes the connection.
    RawConnection intruder(c.ports(1).raft);
    std::string hello;
    // PeerFrame{hello{protocol_version 1, cluster_id 999, from 2, to 1}}, encoded by hand:
    // field 1 (hello), length-delimited: 08 01 10 e7 07 18 02 20 01
    const std::string body("\x08\x01\x10\xe7\x07\x18\x02\x20\x01", 9);
    std::string frame_payload = std::string("\x0a", 1) + static_cast<char>(body.size()) + body;
    net::append_frame(hello, frame_payload);
    intruder.send_bytes(hello);
    CHECK(intruder.closed_by_server());
    check_serving(c, 1);
}

}  // namespace
}  // namespace raftlock::integration
