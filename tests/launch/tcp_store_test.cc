#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/store.h"

namespace fabricscope {
namespace {

using std::chrono::milliseconds;

std::vector<char> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

TEST(TcpStoreTest, ClientsMeetThroughTheServer) {
  TcpStoreServer server(0);
  ASSERT_GT(server.port(), 0);
  std::vector<std::thread> ranks;
  std::vector<std::string> seen(4);
  for (int r = 0; r < 4; ++r) {
    ranks.emplace_back([&, r] {
      TcpStoreClient client("127.0.0.1", server.port(), milliseconds(5000));
      client.Set("rank/" + std::to_string(r), Bytes("hello from " + std::to_string(r)));
      const auto v = client.Get("rank/" + std::to_string((r + 1) % 4), milliseconds(5000));
      seen[static_cast<size_t>(r)] = std::string(v.begin(), v.end());
    });
  }
  for (auto& t : ranks) t.join();
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(seen[static_cast<size_t>(r)], "hello from " + std::to_string((r + 1) % 4));
}

TEST(TcpStoreTest, LargeAndEmptyValuesRoundTrip) {
  TcpStoreServer server(0);
  TcpStoreClient client("localhost", server.port(), milliseconds(5000));
  std::vector<char> big(1 << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  client.Set("big", big);
  client.Set("empty", {});
  EXPECT_EQ(client.Get("big", milliseconds(100)), big);
  EXPECT_TRUE(client.Get("empty", milliseconds(100)).empty());
}

TEST(TcpStoreTest, MissingKeyTimesOutWithItsName) {
  TcpStoreServer server(0);
  TcpStoreClient client("127.0.0.1", server.port(), milliseconds(5000));
  const auto start = std::chrono::steady_clock::now();
  try {
    client.Get("rank/7", milliseconds(300));
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("'rank/7'"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  client.Set("after", Bytes("x"));  // the connection is still usable
  EXPECT_EQ(client.Get("after", milliseconds(100)), Bytes("x"));
}

TEST(TcpStoreTest, NoServerIsATimeoutNamingTheAddress) {
  uint16_t port = 0;
  {
    TcpStoreServer probe(0);  // a port that was free a moment ago
    port = probe.port();
  }
  try {
    TcpStoreClient client("127.0.0.1", port, milliseconds(400));
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("MASTER_ADDR"), std::string::npos) << e.what();
  }
}

TEST(TcpStoreTest, ServerGoingAwayFailsWaitingClients) {
  auto server = std::make_unique<TcpStoreServer>(0);
  TcpStoreClient client("127.0.0.1", server->port(), milliseconds(5000));
  std::thread killer([&] {
    std::this_thread::sleep_for(milliseconds(200));
    server.reset();
  });
  EXPECT_THROW(client.Get("never", milliseconds(20000)), Error);
  killer.join();
}

TEST(TcpStoreTest, BusyPortIsAClearError) {
  TcpStoreServer first(0);
  try {
    TcpStoreServer second(first.port());
    FAIL() << "expected SystemError";
  } catch (const SystemError& e) {
    EXPECT_NE(std::string(e.what()).find("MASTER_PORT"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fabricscope
