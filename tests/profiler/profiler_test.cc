// The profiler plugin: its ABI against NVIDIA/nccl's headers, the lock-free ring, and the
// real libnccl-profiler-fabricscope.so loaded with dlopen and driven through both interfaces
// as NCCL drives it, with its JSONL and Prometheus outputs read back.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fabricscope/collective_math.h"
#include "profiler/nccl_profiler_abi.h"
#include "profiler/record_ring.h"
#include "profiler/settings.h"

namespace fabricscope::profiler {
namespace {

namespace fs = std::filesystem;

// Every figure below was printed by offsetof/sizeof over NVIDIA/nccl's own declarations
// (profiler_v5.h at f1308997d0420148b1be1c24d63f19d902ae589b, profiler_v4.h at
// 51c58fd6b3bd4cc50c8ec18bfd707aab45f3354a) compiled for x86-64 Linux.
TEST(ProfilerAbi, DeclarationsMatchNvidiaHeadersOnLp64) {
  if constexpr (sizeof(void*) != 8) GTEST_SKIP() << "figures are for LP64";
  EXPECT_EQ(sizeof(ncclProfilerEventDescr_v5_t), 112u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v5_t, type), 0u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v5_t, parentObj), 8u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v5_t, rank), 16u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v5_t, coll.seqNumber), 24u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v5_t, coll.func), 32u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v5_t, coll.count), 56u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v5_t, coll.root), 64u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v5_t, coll.datatype), 72u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v5_t, coll.nChannels), 80u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v5_t, coll.nWarps), 81u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v5_t, coll.algo), 88u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v5_t, coll.proto), 96u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v5_t, coll.parentGroup), 104u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v5_t, kernelCh.pTimer), 32u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v5_t, collApi.graphCaptured), 64u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v5_t, proxyOp.isSend), 44u);
  EXPECT_EQ(sizeof(ncclProfilerEventStateArgs_v5_t), 8u);
  EXPECT_EQ(sizeof(ncclProfiler_v5_t), 48u);
  EXPECT_EQ(offsetof(ncclProfiler_v5_t, init), 8u);
  EXPECT_EQ(offsetof(ncclProfiler_v5_t, startEvent), 16u);
  EXPECT_EQ(offsetof(ncclProfiler_v5_t, stopEvent), 24u);
  EXPECT_EQ(offsetof(ncclProfiler_v5_t, recordEventState), 32u);
  EXPECT_EQ(offsetof(ncclProfiler_v5_t, finalize), 40u);
  EXPECT_EQ(sizeof(ncclProfilerEventDescr_v4_t), 104u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v4_t, type), 0u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v4_t, parentObj), 8u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v4_t, rank), 16u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v4_t, coll.seqNumber), 24u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v4_t, coll.func), 32u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v4_t, coll.count), 56u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v4_t, coll.root), 64u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v4_t, coll.datatype), 72u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v4_t, coll.nChannels), 80u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v4_t, coll.nWarps), 81u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v4_t, coll.algo), 88u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v4_t, coll.proto), 96u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v4_t, kernelCh.pTimer), 32u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v4_t, proxyOp.isSend), 44u);
  EXPECT_EQ(sizeof(ncclProfiler_v4_t), 48u);
  EXPECT_EQ(offsetof(ncclProfiler_v4_t, init), 8u);
  EXPECT_EQ(offsetof(ncclProfiler_v4_t, startEvent), 16u);
  EXPECT_EQ(offsetof(ncclProfiler_v4_t, stopEvent), 24u);
  EXPECT_EQ(offsetof(ncclProfiler_v4_t, recordEventState), 32u);
  EXPECT_EQ(offsetof(ncclProfiler_v4_t, finalize), 40u);
  EXPECT_EQ(sizeof(ncclResult_t), 4u);
  EXPECT_EQ(ncclProfileColl, 2);
  EXPECT_EQ(ncclProfileKernelCh, 64);
  EXPECT_EQ(ncclProfilerKernelChStop, 22);
  // v6 (plugins/profiler/example/nccl/profiler_v6.h at v2.30.7-1, 73cf112295c3): the same
  // size as v5, the CE members inside the union.
  EXPECT_EQ(sizeof(ncclProfilerEventDescr_v6_t), 112u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v6_t, coll.parentGroup), 104u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v6_t, p2p.parentGroup), 64u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v6_t, ceColl.seqNumber), 24u);
  EXPECT_EQ(offsetof(ncclProfilerEventDescr_v6_t, ceColl.stream), 104u);
  EXPECT_EQ(sizeof(ncclProfiler_v6_t), 48u);
  EXPECT_EQ(ncclProfileCeColl, 1 << 12);
  EXPECT_EQ(ncclProfilerGroupStartApiStop, 23);
  EXPECT_EQ(ncclProfilerGroupEndApiStart, 24);
}

// ---------------------------------------------------------------------------------------
// The ring.

TEST(RecordRing, DrainsInOrderAndCountsTheNewestItDropped) {
  RecordRing<int> ring(4);
  EXPECT_EQ(ring.capacity(), 4u);
  std::vector<int> out;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(ring.Push(i));
  EXPECT_EQ(ring.Drain(&out), 0u);
  EXPECT_EQ(out, (std::vector<int>{0, 1, 2}));
  out.clear();
  for (int i = 3; i < 13; ++i) ring.Push(i);  // 10 more into 4 slots: the 6 newest dropped
  EXPECT_EQ(ring.Drain(&out), 6u);
  EXPECT_EQ(out, (std::vector<int>{3, 4, 5, 6}));
  out.clear();
  EXPECT_EQ(ring.Drain(&out), 0u);
  EXPECT_TRUE(out.empty());
}

TEST(RecordRing, ConcurrentProducersLoseNothingTheReaderDoesNotCount) {
  RecordRing<uint64_t> ring(1024);
  constexpr int kThreads = 4;
  constexpr uint64_t kEach = 20000;
  std::atomic<int> done{0};
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      for (uint64_t i = 0; i < kEach; ++i) ring.Push(static_cast<uint64_t>(t) * kEach + i);
      done.fetch_add(1);
    });
  }
  std::vector<uint64_t> seen;
  uint64_t dropped = 0;
  while (done.load() < kThreads) dropped += ring.Drain(&seen);
  for (auto& p : producers) p.join();
  dropped += ring.Drain(&seen);
  EXPECT_EQ(seen.size() + dropped, kThreads * kEach);
  // Each producer's records come out in its own order, never twice.
  std::map<uint64_t, uint64_t> last;
  for (uint64_t v : seen) {
    const uint64_t producer = v / kEach;
    if (last.count(producer) != 0) {
      EXPECT_GT(v, last[producer]);
    }
    last[producer] = v;
  }
}

// A record of many words, each the same number: a torn one would mix two numbers.
struct Wide {
  uint64_t words[12];
};

// Writers preempted between claiming a slot and publishing it (the hook yields there), with
// a small ring lapped constantly: issue 27's torn record. Run under ThreadSanitizer too
// (`make tsan`): the copies must be ordered by the slot sequence, not raced.
TEST(RecordRing, WritersPreemptedMidPushNeverHandOutATornRecord) {
  RecordRing<Wide> ring(8, [] { std::this_thread::yield(); });
  constexpr int kThreads = 4;
  constexpr uint64_t kEach = 5000;
  std::atomic<int> done{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      for (uint64_t i = 0; i < kEach; ++i) {
        Wide w{};
        for (uint64_t& word : w.words) word = static_cast<uint64_t>(t) * kEach + i;
        ring.Push(w);
      }
      done.fetch_add(1);
    });
  }
  std::vector<Wide> seen;
  uint64_t dropped = 0;
  while (done.load() < kThreads) dropped += ring.Drain(&seen);
  for (auto& w : writers) w.join();
  dropped += ring.Drain(&seen);
  EXPECT_EQ(seen.size() + dropped, kThreads * kEach);
  EXPECT_GT(seen.size(), 0u);
  size_t torn = 0;
  for (const Wide& w : seen) {
    for (const uint64_t word : w.words) torn += word != w.words[0] ? 1 : 0;
  }
  EXPECT_EQ(torn, 0u);
}

TEST(CollectiveMath, SizesFactorsAndBucketsFollowNcclTests) {
  EXPECT_EQ(NcclTypeSize("ncclFloat32"), 4u);
  EXPECT_EQ(NcclTypeSize("ncclBfloat16"), 2u);
  EXPECT_EQ(NcclTypeSize("ncclFloat8e4m3"), 1u);
  EXPECT_EQ(NcclTypeSize("ncclNothing"), 0u);
  EXPECT_EQ(MessageBytes("AllReduce", 256, 4, 8), 1024u);
  EXPECT_EQ(MessageBytes("AllGather", 256, 4, 8), 8192u);
  EXPECT_DOUBLE_EQ(BusFactor("AllReduce", 4), 1.5);
  EXPECT_DOUBLE_EQ(BusFactor("ReduceScatter", 4), 0.75);
  EXPECT_DOUBLE_EQ(BusFactor("Broadcast", 4), 1.0);
  EXPECT_DOUBLE_EQ(BusFactor("AllReduce", 1), 1.0);
  EXPECT_EQ(SizeBucket(1), "<=1B");
  EXPECT_EQ(SizeBucket(1000), "<=1KiB");
  EXPECT_EQ(SizeBucket(1024), "<=1KiB");
  EXPECT_EQ(SizeBucket(1025), "<=2KiB");
  EXPECT_EQ(SizeBucket(3u << 20), "<=4MiB");
}

TEST(ProfilerSettings, BadValuesAreNamedAndDefaultsKept) {
  const Settings s = ReadSettings(Env(Env::Variables{{"FABRICSCOPE_PROFILER_RING", "lots"},
                                                     {"FABRICSCOPE_PROFILER_INTERVAL_MS", "0"},
                                                     {"SLURM_JOB_ID", "4242"}}));
  EXPECT_EQ(s.ring_entries, 4096u);
  EXPECT_EQ(s.interval_ms, 1000);
  EXPECT_EQ(s.job, "4242");
  EXPECT_EQ(s.dump_dir, "fabricscope-profiler-4242");
  EXPECT_NE(s.errors.find("FABRICSCOPE_PROFILER_RING='lots' is not a whole number >= 2"),
            std::string::npos)
      << s.errors;
  EXPECT_NE(s.errors.find("FABRICSCOPE_PROFILER_INTERVAL_MS='0'"), std::string::npos) << s.errors;
}

// With nothing set, the settings are the defaults docs/env.md states (the registry's).
TEST(ProfilerSettings, AnEmptyEnvironmentGivesTheRegistryDefaults) {
  const Settings s = ReadSettings(Env());
  const auto registry_default = [](std::string_view name) {
    const EnvVariable* v = FindEnvVariable(name);
    return v == nullptr ? std::string("not in the registry") : std::string(v->default_value);
  };
  EXPECT_EQ(registry_default("FABRICSCOPE_PROFILER_ENABLE"), s.enabled ? "1" : "0");
  EXPECT_EQ(registry_default("FABRICSCOPE_PROFILER_JSONL"), s.jsonl ? "1" : "0");
  EXPECT_EQ(registry_default("FABRICSCOPE_PROFILER_INTERVAL_MS"), std::to_string(s.interval_ms));
  EXPECT_EQ(registry_default("FABRICSCOPE_PROFILER_RING"), std::to_string(s.ring_entries));
  EXPECT_EQ(registry_default("FABRICSCOPE_PROFILER_ACTIVE"), std::to_string(s.active_events));
  EXPECT_EQ(registry_default("FABRICSCOPE_PROFILER_MIN_BYTES"), std::to_string(s.min_bytes));
  EXPECT_EQ(registry_default("FABRICSCOPE_PROFILER_PROM_LISTEN"), "unset");
  EXPECT_TRUE(s.prom_listen.empty());
  EXPECT_EQ(s.job, "unknown");
  EXPECT_EQ(registry_default("FABRICSCOPE_PROFILER_DUMP_DIR"), "fabricscope-profiler-<job>");
  EXPECT_EQ(s.dump_dir, "fabricscope-profiler-unknown");
  EXPECT_EQ(s.prom_sd_dir, s.dump_dir);  // "the dump directory"
  EXPECT_TRUE(s.errors.empty()) << s.errors;
}

// ---------------------------------------------------------------------------------------
// The real plugin, loaded as NCCL loads it.

class PluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("i17-profiler-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    ::setenv("FABRICSCOPE_PROFILER_DUMP_DIR", (dir_ / "out").c_str(), 1);
    ::setenv("FABRICSCOPE_JOB_ID", "job-7", 1);
    lib_ = ::dlopen(PROFILER_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib_, nullptr) << ::dlerror();
    v5_ = static_cast<ncclProfiler_v5_t*>(::dlsym(lib_, "ncclProfiler_v5"));
    v4_ = static_cast<ncclProfiler_v4_t*>(::dlsym(lib_, "ncclProfiler_v4"));
    v6_ = static_cast<ncclProfiler_v6_t*>(::dlsym(lib_, "ncclProfiler_v6"));
    ASSERT_NE(v6_, nullptr);
    ASSERT_NE(v5_, nullptr);
    ASSERT_NE(v4_, nullptr);
  }
  void TearDown() override {
    for (const char* v : {"FABRICSCOPE_PROFILER_DUMP_DIR", "FABRICSCOPE_JOB_ID",
                          "FABRICSCOPE_PROFILER_ENABLE", "FABRICSCOPE_PROFILER_PROM_LISTEN"}) {
      ::unsetenv(v);
    }
    if (lib_ != nullptr) ::dlclose(lib_);
    fs::remove_all(dir_);
  }

  // Every line of every JSONL file the plugin wrote.
  std::vector<nlohmann::json> Lines() {
    std::vector<nlohmann::json> lines;
    if (!fs::exists(dir_ / "out")) return lines;
    for (const auto& f : fs::directory_iterator(dir_ / "out")) {
      if (f.path().extension() != ".jsonl") continue;
      std::ifstream in(f.path());
      for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
    }
    return lines;
  }

  template <typename Descr>
  static Descr Coll(uint64_t seq, const char* func, size_t count, const char* type) {
    Descr d{};
    d.type = ncclProfileColl;
    d.rank = 1;
    d.coll.seqNumber = seq;
    d.coll.func = func;
    d.coll.count = count;
    d.coll.datatype = type;
    d.coll.nChannels = 4;
    d.coll.algo = "RING";
    d.coll.proto = "LL128";
    return d;
  }

  // NCCL 2.30's order for one collective (src/enqueue.cc hostStreamPlanTask, then
  // src/transport/profiler.cc profilerProxyProgress): the Coll starts and stops at enqueue,
  // then each channel's KernelCh starts with the GPU timer and stops with
  // ncclProfilerKernelChStop carrying it. Channel c runs kernel_ns + c * 1000 ns.
  template <typename Api, typename Descr>
  static void RunColl(Api* api, void* context, Descr d, uint64_t gpu0, uint64_t kernel_ns) {
    void* coll = nullptr;
    ASSERT_EQ(api->startEvent(context, &coll, &d), ncclSuccess);
    ASSERT_NE(coll, nullptr);
    ASSERT_EQ(api->stopEvent(coll), ncclSuccess);
    std::vector<void*> kernels;
    for (int ch = 0; ch < d.coll.nChannels; ++ch) {
      Descr k{};
      k.type = ncclProfileKernelCh;
      k.parentObj = coll;
      k.kernelCh.channelId = static_cast<uint8_t>(ch);
      k.kernelCh.pTimer = gpu0;
      void* h = nullptr;
      ASSERT_EQ(api->startEvent(context, &h, &k), ncclSuccess);
      ASSERT_NE(h, nullptr);
      kernels.push_back(h);
    }
    for (int ch = 0; ch < d.coll.nChannels; ++ch) {
      ncclProfilerEventStateArgs_v5_t args{};
      args.kernelCh.pTimer = gpu0 + kernel_ns + static_cast<uint64_t>(ch) * 1000;
      ASSERT_EQ(api->recordEventState(kernels[ch], ncclProfilerKernelChStop, &args), ncclSuccess);
      ASSERT_EQ(api->stopEvent(kernels[ch]), ncclSuccess);
    }
  }

  fs::path dir_;
  void* lib_ = nullptr;
  ncclProfiler_v6_t* v6_ = nullptr;
  ncclProfiler_v5_t* v5_ = nullptr;
  ncclProfiler_v4_t* v4_ = nullptr;
};

TEST_F(PluginTest, V5RecordsEachCollectiveAsInspectorJsonl) {
  EXPECT_STREQ(v5_->name, "fabricscope");
  void* context = nullptr;
  int mask = 0;
  ASSERT_EQ(v5_->init(&context, 0xabcdef, &mask, "dp-group", 2, 4, 1, nullptr), ncclSuccess);
  ASSERT_NE(context, nullptr);
  EXPECT_EQ(mask, ncclProfileColl | ncclProfileP2p | ncclProfileKernelCh | ncclProfileProxyOp |
                      ncclProfileCeColl);
  for (uint64_t seq = 0; seq < 3; ++seq) {
    auto d = Coll<ncclProfilerEventDescr_v5_t>(seq, "AllReduce", 1 << 20, "ncclFloat32");
    RunColl(v5_, context, d, 5000000000 + seq * 1000000, 600000);  // 600 us, channel 3: 603
  }
  // Events NCCL starts whatever the plugin asked (any Coll bit starts GroupApi, CollApi and
  // Group events: src/plugin/profiler.cc) get no handle.
  for (const uint64_t type :
       {uint64_t{ncclProfileGroup}, uint64_t{ncclProfileGroupApi}, uint64_t{ncclProfileCollApi},
        uint64_t{ncclProfileKernelLaunch}, uint64_t{ncclProfileProxyStep}}) {
    ncclProfilerEventDescr_v5_t other{};
    other.type = type;
    void* none = &other;
    EXPECT_EQ(v5_->startEvent(context, &none, &other), ncclSuccess);
    EXPECT_EQ(none, nullptr) << type;
  }
  ASSERT_EQ(v5_->finalize(context), ncclSuccess);

  const auto lines = Lines();
  ASSERT_EQ(lines.size(), 3u);
  for (uint64_t seq = 0; seq < 3; ++seq) {
    const auto& l = lines[seq];
    EXPECT_EQ(l["header"]["id"], "0xabcdef");
    EXPECT_EQ(l["header"]["rank"], 1);
    EXPECT_EQ(l["header"]["n_ranks"], 4);
    EXPECT_EQ(l["header"]["nnodes"], 2);
    EXPECT_EQ(l["header"]["comm_name"], "dp-group");
    EXPECT_EQ(l["metadata"]["pid"], ::getpid());
    const auto& p = l["coll_perf"];
    EXPECT_EQ(p["coll"], "AllReduce");
    EXPECT_EQ(p["coll_sn"], seq);
    EXPECT_EQ(p["coll_msg_size_bytes"], 4u << 20);
    EXPECT_EQ(p["coll_algo"], "RING");
    EXPECT_EQ(p["coll_proto"], "LL128");
    const double us = p["coll_exec_time_us"];
    EXPECT_DOUBLE_EQ(us, 603.0);  // the longest channel, by the GPU timer
    EXPECT_EQ(p["coll_timing_source"], "kernel_gpu");
    // busbw = bytes / time x 2(n-1)/n.
    EXPECT_NEAR(p["coll_busbw_gbs"].get<double>(), (4 << 20) / (us * 1e3) * 1.5, 1e-9);
    EXPECT_LE(p["event_trace_ts"]["coll_start_ts"].get<int64_t>(),
              p["event_trace_ts"]["coll_stop_ts"].get<int64_t>());
    EXPECT_EQ(l["fabricscope"]["job"], "job-7");
    EXPECT_EQ(l["fabricscope"]["comm_name"], "dp-group");
    EXPECT_EQ(l["fabricscope"]["datatype"], "ncclFloat32");
    EXPECT_EQ(l["fabricscope"]["channels"], 4);
  }
}

TEST_F(PluginTest, V4TakesItsOwnArgumentOrderAndDescriptor) {
  void* context = nullptr;
  int mask = 0;
  ASSERT_EQ(v4_->init(&context, &mask, "", 0x1234, 1, 8, 5, nullptr), ncclSuccess);
  EXPECT_NE(mask & ncclProfileKernelCh, 0);
  // AllGather's count arrives in bytes, as ncclInt8 (src/enqueue.cc, collTaskAppend): 1000
  // bf16 elements per rank.
  auto d = Coll<ncclProfilerEventDescr_v4_t>(9, "AllGather", 2000, "ncclInt8");
  d.coll.nChannels = 1;
  void* handle = nullptr;
  ASSERT_EQ(v4_->startEvent(context, &handle, &d), ncclSuccess);
  ASSERT_NE(handle, nullptr);
  ASSERT_EQ(v4_->stopEvent(handle), ncclSuccess);
  // A KernelCh without a GPU timer (pTimer 0, no KernelChStop state): timed by the CPU.
  ncclProfilerEventDescr_v4_t k{};
  k.type = ncclProfileKernelCh;
  k.parentObj = handle;
  void* kernel = nullptr;
  ASSERT_EQ(v4_->startEvent(context, &kernel, &k), ncclSuccess);
  ASSERT_NE(kernel, nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_EQ(v4_->stopEvent(kernel), ncclSuccess);
  ASSERT_EQ(v4_->finalize(context), ncclSuccess);
  const auto lines = Lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["header"]["id"], "0x1234");
  EXPECT_EQ(lines[0]["header"]["comm_name"], "unknown");  // as Inspector names an unnamed one
  EXPECT_EQ(lines[0]["header"]["rank"], 5);
  EXPECT_EQ(lines[0]["coll_perf"]["coll_sn"], 9);
  // Inspector's convention: count x type size, one rank's part; busbw from the gathered 8x.
  EXPECT_EQ(lines[0]["coll_perf"]["coll_msg_size_bytes"], 2000);
  EXPECT_EQ(lines[0]["coll_perf"]["coll_timing_source"], "kernel_cpu");
  const double us = lines[0]["coll_perf"]["coll_exec_time_us"];
  EXPECT_GE(us, 2000.0);
  EXPECT_NEAR(lines[0]["coll_perf"]["coll_busbw_gbs"].get<double>(), 2000 * 8 / (us * 1e3) * 7 / 8,
              1e-9);
}

TEST_F(PluginTest, DisabledItDoesNothingAtAll) {
  ::setenv("FABRICSCOPE_PROFILER_ENABLE", "0", 1);
  void* context = &context;
  int mask = -1;
  ASSERT_EQ(v5_->init(&context, 1, &mask, "", 1, 2, 0, nullptr), ncclSuccess);
  EXPECT_EQ(context, nullptr);
  EXPECT_EQ(mask, 0);
  EXPECT_EQ(v5_->finalize(context), ncclSuccess);
  EXPECT_FALSE(fs::exists(dir_ / "out"));  // no directory, file, thread or port
}

TEST_F(PluginTest, APoolFullOfInFlightCollectivesDropsRatherThanWaits) {
  ::setenv("FABRICSCOPE_PROFILER_ACTIVE", "2", 1);
  void* context = nullptr;
  int mask = 0;
  ASSERT_EQ(v5_->init(&context, 3, &mask, "", 1, 2, 0, nullptr), ncclSuccess);
  std::vector<void*> handles;
  for (uint64_t seq = 0; seq < 3; ++seq) {
    auto d = Coll<ncclProfilerEventDescr_v5_t>(seq, "AllReduce", 8, "ncclFloat32");
    d.coll.nChannels = 0;  // no KernelCh due: each completes at its stop
    void* h = nullptr;
    ASSERT_EQ(v5_->startEvent(context, &h, &d), ncclSuccess);
    handles.push_back(h);
  }
  EXPECT_NE(handles[0], nullptr);
  EXPECT_NE(handles[1], nullptr);
  EXPECT_EQ(handles[2], nullptr);  // the third: no slot, no wait
  for (void* h : handles) EXPECT_EQ(v5_->stopEvent(h), ncclSuccess);
  ASSERT_EQ(v5_->finalize(context), ncclSuccess);
  ::unsetenv("FABRICSCOPE_PROFILER_ACTIVE");
  const auto lines = Lines();
  ASSERT_EQ(lines.size(), 3u);  // the loss (Inspector's dump_stats) and two records
  EXPECT_EQ(lines[0]["dump_stats"]["coll_dropped_since_last_dump"], 1);
  EXPECT_EQ(lines[1]["coll_perf"]["coll_sn"], 0);
  EXPECT_EQ(lines[2]["coll_perf"]["coll_sn"], 1);
}

// NCCL stops the Coll before its kernels run, and the proxy thread may start a channel's
// KernelCh before that stop: the record waits for both, whatever the order.
TEST_F(PluginTest, ACollectiveCompletesAtItsLastKernelChWhateverTheOrder) {
  void* context = nullptr;
  int mask = 0;
  ASSERT_EQ(v6_->init(&context, 0x99, &mask, "tp", 1, 2, 0, nullptr), ncclSuccess);
  auto d = Coll<ncclProfilerEventDescr_v6_t>(4, "ReduceScatter", 1 << 16, "ncclFloat32");
  d.coll.nChannels = 2;
  void* coll = nullptr;
  ASSERT_EQ(v6_->startEvent(context, &coll, &d), ncclSuccess);
  ncclProfilerEventDescr_v6_t k{};
  k.type = ncclProfileKernelCh;
  k.parentObj = coll;
  k.kernelCh.pTimer = 1000;
  void* ch0 = nullptr;
  ASSERT_EQ(v6_->startEvent(context, &ch0, &k), ncclSuccess);  // before the Coll's stop
  ASSERT_EQ(v6_->stopEvent(coll), ncclSuccess);
  k.kernelCh.channelId = 1;
  void* ch1 = nullptr;
  ASSERT_EQ(v6_->startEvent(context, &ch1, &k), ncclSuccess);
  void* extra = &k;  // a third KernelCh for a two-channel collective is refused
  ASSERT_EQ(v6_->startEvent(context, &extra, &k), ncclSuccess);
  EXPECT_EQ(extra, nullptr);
  ncclProfilerEventStateArgs_v6_t a{};
  a.kernelCh.pTimer = 251000;
  ASSERT_EQ(v6_->recordEventState(ch1, ncclProfilerKernelChStop, &a), ncclSuccess);
  ASSERT_EQ(v6_->stopEvent(ch1), ncclSuccess);
  a.kernelCh.pTimer = 201000;
  ASSERT_EQ(v6_->recordEventState(ch0, ncclProfilerKernelChStop, &a), ncclSuccess);
  ASSERT_EQ(v6_->stopEvent(ch0), ncclSuccess);
  // A KernelCh whose parent the plugin never gave (Broadcast: no Coll event) is ignored.
  k.parentObj = nullptr;
  void* orphan = &k;
  ASSERT_EQ(v6_->startEvent(context, &orphan, &k), ncclSuccess);
  EXPECT_EQ(orphan, nullptr);
  ASSERT_EQ(v6_->finalize(context), ncclSuccess);
  const auto lines = Lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_DOUBLE_EQ(lines[0]["coll_perf"]["coll_exec_time_us"].get<double>(), 250.0);
  EXPECT_EQ(lines[0]["coll_perf"]["coll_sn"], 4);
  EXPECT_EQ(lines[0]["coll_perf"]["coll_timing_source"], "kernel_gpu");
}

// Sends and receives (and so AlltoAll, Gather, Scatter, which NCCL 2.30 runs as P2p tasks)
// are Inspector's p2p_perf; the ProxyOps give one link line per peer and direction; v6's
// copy-engine collectives are recorded with their enqueue time, marked as such.
TEST_F(PluginTest, P2pProxyOpsAndCopyEngineCollectivesAreRecorded) {
  void* context = nullptr;
  int mask = 0;
  ASSERT_EQ(v6_->init(&context, 0x55, &mask, "", 1, 4, 2, nullptr), ncclSuccess);
  ncclProfilerEventDescr_v6_t p{};
  p.type = ncclProfileP2p;
  p.p2p.func = "Send";
  p.p2p.count = 1 << 20;
  p.p2p.datatype = "ncclInt8";
  p.p2p.peer = 3;
  p.p2p.nChannels = 1;
  void* send = nullptr;
  ASSERT_EQ(v6_->startEvent(context, &send, &p), ncclSuccess);
  ASSERT_NE(send, nullptr);
  ASSERT_EQ(v6_->stopEvent(send), ncclSuccess);
  ncclProfilerEventDescr_v6_t op{};
  op.type = ncclProfileProxyOp;
  op.parentObj = send;
  op.proxyOp.peer = 3;
  op.proxyOp.isSend = 1;
  op.proxyOp.nSteps = 8;
  void* proxy = nullptr;
  ASSERT_EQ(v6_->startEvent(context, &proxy, &op), ncclSuccess);
  ASSERT_NE(proxy, nullptr);
  ncclProfilerEventDescr_v6_t k{};
  k.type = ncclProfileKernelCh;
  k.parentObj = send;
  k.kernelCh.pTimer = 10000;
  void* kernel = nullptr;
  ASSERT_EQ(v6_->startEvent(context, &kernel, &k), ncclSuccess);
  ASSERT_EQ(v6_->stopEvent(proxy), ncclSuccess);
  ncclProfilerEventStateArgs_v6_t a{};
  a.kernelCh.pTimer = 110000;
  ASSERT_EQ(v6_->recordEventState(kernel, ncclProfilerKernelChStop, &a), ncclSuccess);
  ASSERT_EQ(v6_->stopEvent(kernel), ncclSuccess);
  ncclProfilerEventDescr_v6_t ce{};
  ce.type = ncclProfileCeColl;
  ce.ceColl.func = "AllGather";
  ce.ceColl.seqNumber = 7;
  ce.ceColl.count = 4096;
  ce.ceColl.datatype = "ncclInt8";
  void* ce_handle = nullptr;
  ASSERT_EQ(v6_->startEvent(context, &ce_handle, &ce), ncclSuccess);
  ASSERT_NE(ce_handle, nullptr);
  ASSERT_EQ(v6_->stopEvent(ce_handle), ncclSuccess);
  ASSERT_EQ(v6_->finalize(context), ncclSuccess);
  int p2p = 0;
  int links = 0;
  int ce_colls = 0;
  for (const auto& l : Lines()) {
    if (l.contains("p2p_perf")) {
      ++p2p;
      EXPECT_EQ(l["p2p_perf"]["p2p"], "Send");
      EXPECT_EQ(l["p2p_perf"]["p2p_peer"], 3);
      EXPECT_EQ(l["p2p_perf"]["p2p_msg_size_bytes"], 1 << 20);
      EXPECT_DOUBLE_EQ(l["p2p_perf"]["p2p_exec_time_us"].get<double>(), 100.0);
      EXPECT_EQ(l["p2p_perf"]["p2p_timing_source"], "kernel_gpu");
    }
    if (l.contains("fabricscope_link")) {
      ++links;
      EXPECT_EQ(l["fabricscope_link"]["peer"], 3);
      EXPECT_EQ(l["fabricscope_link"]["direction"], "send");
      EXPECT_EQ(l["fabricscope_link"]["ops"], 1);
    }
    if (l.contains("coll_perf")) {
      ++ce_colls;
      EXPECT_EQ(l["coll_perf"]["coll_algo"], "CE");
      EXPECT_EQ(l["coll_perf"]["coll_timing_source"], "collective_cpu");
    }
  }
  EXPECT_EQ(p2p, 1);
  EXPECT_EQ(links, 1);
  EXPECT_EQ(ce_colls, 1);
}

// NCCL's activation mask is one int of the process that every init writes while other
// threads enqueue (src/plugin/profiler.cc, ncclProfilerEventMask, read with relaxed atomic
// loads). Concurrent inits must never let a reader see it 0 once it was set.
TEST_F(PluginTest, ConcurrentInitsNeverShowTheMaskAsZero) {
  int mask = 0;
  void* first = nullptr;
  ASSERT_EQ(v5_->init(&first, 1, &mask, "", 1, 1, 0, nullptr), ncclSuccess);
  std::atomic<bool> stop{false};
  std::atomic<int> zeros{0};
  std::thread reader([&] {
    while (!stop.load()) zeros += __atomic_load_n(&mask, __ATOMIC_RELAXED) == 0 ? 1 : 0;
  });
  std::vector<std::thread> inits;
  std::mutex contexts_mutex;
  std::vector<void*> contexts;
  for (int t = 0; t < 4; ++t) {
    inits.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        void* c = nullptr;
        v5_->init(&c, static_cast<uint64_t>(100 + t * 10 + i), &mask, "", 1, 4, t, nullptr);
        const std::lock_guard lock(contexts_mutex);
        contexts.push_back(c);
      }
    });
  }
  for (auto& t : inits) t.join();
  stop = true;
  reader.join();
  EXPECT_EQ(zeros.load(), 0);
  for (void* c : contexts) EXPECT_EQ(v5_->finalize(c), ncclSuccess);
  EXPECT_EQ(v5_->finalize(first), ncclSuccess);
}

// What the endpoint serves, through curl as a scraper would fetch it.
std::string Fetch(const std::string& url) {
  std::string out;
  if (FILE* p = ::popen(("curl -sf --max-time 10 " + url).c_str(), "r")) {
    char buffer[4096];
    size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, p)) > 0) out.append(buffer, n);
    ::pclose(p);
  }
  return out;
}

TEST_F(PluginTest, ThePrometheusEndpointServesHistogramsWithTheJobsLabels) {
  if (std::system("command -v curl >/dev/null 2>&1") != 0) GTEST_SKIP() << "curl not installed";
  ::setenv("FABRICSCOPE_PROFILER_PROM_LISTEN", "127.0.0.1:0", 1);
  ::setenv("FABRICSCOPE_PROFILER_INTERVAL_MS", "10", 1);
  void* context = nullptr;
  int mask = 0;
  ASSERT_EQ(v5_->init(&context, 0x77, &mask, "", 1, 2, 1, nullptr), ncclSuccess);
  ::unsetenv("FABRICSCOPE_PROFILER_INTERVAL_MS");
  auto d = Coll<ncclProfilerEventDescr_v5_t>(0, "AllReduce", 1 << 18, "ncclFloat32");
  RunColl(v5_, context, d, 1000000, 100000);
  // The chosen port is published as a Prometheus file_sd target.
  std::vector<fs::path> targets;
  for (const auto& f : fs::directory_iterator(dir_ / "out")) {
    if (f.path().string().ends_with(".prom.json")) targets.push_back(f.path());
  }
  ASSERT_EQ(targets.size(), 1u);
  const auto sd = nlohmann::json::parse(std::ifstream(targets[0]));
  const std::string address = sd[0]["targets"][0];
  EXPECT_EQ(address.rfind("127.0.0.1:", 0), 0u) << address;
  EXPECT_EQ(sd[0]["labels"]["fabricscope_job"], "job-7");
  // The drain thread observes the record within its 10 ms interval; poll, no fixed sleep.
  std::string metrics;
  for (int i = 0; i < 500; ++i) {
    metrics = Fetch("http://" + address + "/metrics");
    if (metrics.find("duration_seconds_count{") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (const char* expected :
       {"fabricscope_nccl_collective_duration_seconds_count{", "collective=\"AllReduce\"",
        "job_id=\"job-7\"", "rank=\"1\"", "size_bucket=\"<=1MiB\"", "comm=\"0x77\"",
        "fabricscope_nccl_collective_busbw_bytes_per_second_bucket{"}) {
    EXPECT_NE(metrics.find(expected), std::string::npos) << expected << "\n" << metrics;
  }
  ASSERT_EQ(v5_->finalize(context), ncclSuccess);
  EXPECT_FALSE(fs::exists(targets[0]));  // the target goes with the endpoint
}

}  // namespace
}  // namespace fabricscope::profiler
