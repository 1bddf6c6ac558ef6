// Real processes of the real binary, launched the torchrun way (RANK, WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT) on this host: results, and failures that never hang.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// One process of a job, with its output in files.
struct Proc {
  pid_t pid = -1;
  int exit_code = -1;
  fs::path out;
  fs::path err;
};

class MultiProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fabricscope-mp-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    for (Proc& p : procs_) {
      if (p.pid > 0 && p.exit_code < 0) {
        ::kill(p.pid, SIGKILL);
        ::waitpid(p.pid, nullptr, 0);
      }
    }
    fs::remove_all(dir_);
  }

  // Starts process `rank` of `world` with the given flags.
  Proc& Start(int rank, int world, const std::vector<std::string>& flags) {
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
    env_strings.push_back("RANK=" + std::to_string(rank));
    env_strings.push_back("WORLD_SIZE=" + std::to_string(world));
    env_strings.push_back("LOCAL_RANK=" + std::to_string(rank));
    env_strings.push_back("MASTER_ADDR=127.0.0.1");
    // Process 0's store binds a port of its own and publishes it; the others read it.
    env_strings.push_back("MASTER_PORT=0");
    env_strings.push_back("FABRICSCOPE_PORT_FILE=" + (dir_ / "port").string());
    std::vector<char*> envp;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_strings{FABRICSCOPE_BINARY, "run"};
    argv_strings.insert(argv_strings.end(), flags.begin(), flags.end());
    std::vector<char*> argv;
    for (auto& s : argv_strings) argv.push_back(s.data());
    argv.push_back(nullptr);

    Proc p;
    p.out = dir_ / ("out." + std::to_string(rank));
    p.err = dir_ / ("err." + std::to_string(rank));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, p.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addopen(&actions, 2, p.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    const int rc = posix_spawn(&p.pid, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    EXPECT_EQ(rc, 0);
    procs_.push_back(p);
    return procs_.back();
  }

  // Waits for a process; fails (and kills it) rather than hang past the deadline.
  int Wait(Proc& p, std::chrono::seconds limit) {
    const auto deadline = Clock::now() + limit;
    while (Clock::now() < deadline) {
      int status = 0;
      if (::waitpid(p.pid, &status, WNOHANG) == p.pid) {
        p.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return p.exit_code;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "process " << p.pid << " still running after " << limit.count() << " s";
    ::kill(p.pid, SIGKILL);
    ::waitpid(p.pid, nullptr, 0);
    p.exit_code = 137;
    return p.exit_code;
  }

  // Waits until process 0 printed `rows` rows of the sweep (fails the test if it does not).
  void AwaitRows(size_t rows) {
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (Clock::now() < deadline && Count(Slurp(procs_[0].out), "float     sum") < rows) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_GE(Count(Slurp(procs_[0].out), "float     sum"), rows) << Slurp(procs_[0].err);
  }

  fs::path dir_;
  std::vector<Proc> procs_;
};

TEST_F(MultiProcessTest, ThreeProcessesTimesTwoThreadsValidateEveryCollective) {
  const std::vector<std::string> flags{"-t", "2", "--collective", "all", "-b", "1K", "-e", "16K",
                                       "-f", "4", "-n",           "2",   "-r", "-1", "-T", "60"};
  for (int r = 0; r < 3; ++r) Start(r, 3, flags);
  for (Proc& p : procs_) EXPECT_EQ(Wait(p, std::chrono::seconds(120)), 0) << Slurp(p.err);
  const std::string out = Slurp(procs_[0].out);
  EXPECT_EQ(Count(out, "# Out of bounds values : 0 OK"), 9u) << out;
  EXPECT_NE(out.find("# nThread 2 nGpus 1"), std::string::npos);
  // Six rank lines, numbered process x threads + thread, three pids.
  for (int r = 0; r < 6; ++r) {
    EXPECT_NE(
        out.find("#  Rank " + std::string(r < 10 ? " " : "") + std::to_string(r) + " Group  0"),
        std::string::npos)
        << out;
  }
  EXPECT_TRUE(Slurp(procs_[1].out).empty());  // only rank 0 reports
  EXPECT_TRUE(Slurp(procs_[2].out).empty());
}

TEST_F(MultiProcessTest, SplitRunsOneCommunicatorPerColour) {
  // 4 ranks, colour = rank % 2: two communicators of 2 ranks; rank 0 reports its own.
  setenv("NCCL_TESTS_SPLIT", "MOD 2", 1);
  for (int r = 0; r < 2; ++r) Start(r, 2, {"-t", "2", "-b", "1K", "-e", "1K", "-n", "2"});
  unsetenv("NCCL_TESTS_SPLIT");
  for (Proc& p : procs_) EXPECT_EQ(Wait(p, std::chrono::seconds(60)), 0) << Slurp(p.err);
  const std::string out = Slurp(procs_[0].out);
  EXPECT_NE(out.find("# Out of bounds values : 0 OK"), std::string::npos) << out;
  EXPECT_NE(out.find("#  Rank  3"), std::string::npos) << out;  // every rank is listed
}

TEST_F(MultiProcessTest, KilledRankEndsTheJobWithANamedErrorAndResultsOnDisk) {
  const fs::path json = dir_ / "results.json";
  // -N 0 runs until something stops it; -T 5 bounds every wait on a peer.
  const std::vector<std::string> flags{"-b", "1K", "-e", "64K", "-f", "2",  "-n",
                                       "5",  "-N", "0",  "-T",  "5",  "-J", json.string()};
  for (int r = 0; r < 3; ++r) Start(r, 3, flags);
  // Let a few sizes complete, then kill rank 2 outright.
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline && Count(Slurp(procs_[0].out), "float     sum") < 8) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_GE(Count(Slurp(procs_[0].out), "float     sum"), 8u) << Slurp(procs_[0].err);
  ::kill(procs_[2].pid, SIGKILL);
  const auto killed_at = Clock::now();
  const int code0 = Wait(procs_[0], std::chrono::seconds(30));
  const int code1 = Wait(procs_[1], std::chrono::seconds(30));
  EXPECT_LT(Clock::now() - killed_at, std::chrono::seconds(25));  // within -T, with slack
  EXPECT_EQ(code0, 3);  // a failure while running, not a crash
  EXPECT_EQ(code1, 3);
  const std::string err = Slurp(procs_[0].err);
  EXPECT_NE(err.find("fabricscope: error: rank 0"), std::string::npos) << err;
  // Gloo bounds each wait by -T, so the call stuck behind the dead rank fails with a named
  // phase, and process 0 then names the process that never finished. The -T watchdog (the
  // timeout plus a grace) must not end it instead: it used to, when the failed call stayed
  // marked in flight while process 0 waited up to -T for its peers' reports
  // (FakeWatchdogTest.AFailedCallIsNotTakenForAStuckOne pins the fix).
  EXPECT_EQ(err.find("did not complete within"), std::string::npos) << err;
  EXPECT_NE(err.find("during all_reduce float sum"), std::string::npos) << err;
  EXPECT_NE(err.find("never finished: process 2 (ranks 2-2 on "), std::string::npos) << err;
  // The completed sizes are on disk, in valid JSON.
  const auto doc = nlohmann::json::parse(Slurp(json));
  EXPECT_GE(doc["results"].size(), 8u);
  EXPECT_FALSE(doc["errors"].empty());
}

TEST_F(MultiProcessTest, ProcessesStartedWithDifferentFlagsAllEndWithExit2NamingTheFlag) {
  // One node's script differs (-e 4M where the others say 1M), and another node logs more
  // (NCCL_DEBUG, which does not change what the ranks exchange). Without the agreement, the
  // ranks met in collectives of different sizes and Gloo aborted process 0 from its own
  // thread (gloo::EnforceNotMet, SIGABRT, a core dump).
  const auto start = Clock::now();
  for (int r = 0; r < 4; ++r) {
    if (r == 1) setenv("NCCL_DEBUG", "INFO", 1);
    Start(r, 4, {"-b", "1M", "-e", r == 2 ? "4M" : "1M", "-f", "2", "-n", "2", "-T", "30"});
    unsetenv("NCCL_DEBUG");
  }
  std::string message;
  for (Proc& p : procs_) {
    EXPECT_EQ(Wait(p, std::chrono::seconds(30)), 2) << Slurp(p.err);
    const std::string err = Slurp(p.err);
    const size_t at = err.find("fabricscope: error: ");
    ASSERT_NE(at, std::string::npos) << err;
    const std::string line = err.substr(at, err.find('\n', at) - at);
    if (message.empty()) message = line;
    EXPECT_EQ(line, message);  // the same message on every process
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  EXPECT_NE(message.find("-e/--maxbytes is 1048576 on process 0 (rank 0 on "), std::string::npos)
      << message;
  EXPECT_NE(message.find("but 4194304 on process 2 (rank 2 on "), std::string::npos) << message;
  EXPECT_EQ(message.find("NCCL_DEBUG"), std::string::npos) << message;
  // The difference that does not shape the run is a warning of process 0, naming the process.
  const std::string warned = Slurp(procs_[0].err);
  EXPECT_NE(warned.find("fabricscope: warning: "), std::string::npos) << warned;
  EXPECT_NE(warned.find("but INFO on process 1 (rank 1 on "), std::string::npos) << warned;
  EXPECT_TRUE(Slurp(procs_[0].out).find("float     sum") == std::string::npos);  // nothing ran
}

TEST_F(MultiProcessTest, StoppedProcessIsNamedAsNotProgressingWithinTheTimeout) {
  // SIGSTOP: a hung or swapped-out host whose kernel still answers TCP. The heartbeat sees
  // the silence, and the store's connection says the host is there: not progressing.
  const std::vector<std::string> flags{"-b", "1K", "-e", "64K", "-f", "2",
                                       "-n", "5",  "-N", "0",   "-T", "10"};
  for (int r = 0; r < 2; ++r) Start(r, 2, flags);
  AwaitRows(4);
  ::kill(procs_[1].pid, SIGSTOP);
  const auto stopped_at = Clock::now();
  EXPECT_EQ(Wait(procs_[0], std::chrono::seconds(60)), 3);
  EXPECT_LT(Clock::now() - stopped_at, std::chrono::seconds(40));
  ::kill(procs_[1].pid, SIGCONT);
  const std::string err = Slurp(procs_[0].err);
  EXPECT_NE(err.find("process 1 (rank 1 on "), std::string::npos) << err;
  EXPECT_NE(err.find("is not progressing"), std::string::npos) << err;
  EXPECT_NE(err.find("its host still answers"), std::string::npos) << err;
  EXPECT_NE(Wait(procs_[1], std::chrono::seconds(60)), 0);
}

TEST_F(MultiProcessTest, SigtermMidSweepKeepsTheRowsAndMarksTheFileIncomplete) {
  const fs::path json = dir_ / "results.json";
  const std::vector<std::string> flags{"-b", "1K", "-e", "64K", "-f", "2",  "-n",
                                       "5",  "-N", "0",  "-T",  "30", "-J", json.string()};
  for (int r = 0; r < 2; ++r) Start(r, 2, flags);
  AwaitRows(6);
  ::kill(procs_[0].pid, SIGTERM);  // what Slurm and Kubernetes send
  EXPECT_EQ(Wait(procs_[0], std::chrono::seconds(30)), 143);
  EXPECT_EQ(Wait(procs_[1], std::chrono::seconds(30)), 3);
  const std::string err = Slurp(procs_[0].err);
  EXPECT_NE(err.find("was ended by SIGTERM during sweep"), std::string::npos) << err;
  EXPECT_NE(err.find("(exit 143)"), std::string::npos) << err;
  const std::string out = Slurp(procs_[0].out);
  const size_t rows = Count(out, "float     sum");
  EXPECT_GE(rows, 6u);
  EXPECT_NE(out.find("# error: process 0 (rank 0 on "), std::string::npos) << out;
  const auto doc = nlohmann::json::parse(Slurp(json));
  EXPECT_EQ(doc["complete"], false);
  EXPECT_NE(doc["incomplete"].get<std::string>().find("SIGTERM"), std::string::npos) << doc;
  EXPECT_EQ(doc["results"].size(), rows);            // every row printed is in the file
  EXPECT_EQ(doc["out_of_bounds"]["okay"], "false");  // not a run that passed
}

TEST_F(MultiProcessTest, APeerPostingAnotherSizeEndsWithExit3NeverASignal) {
  // Past the plan agreement (injected), rank 1 posts half the count: Gloo's transport thread
  // throws gloo::EnforceNotMet in process 1, which used to abort it (SIGABRT, a core dump).
  const std::vector<std::string> flags{
      "-b", "1M", "-e", "1M", "-n", "5", "-T", "30", "--inject-size-fault", "1"};
  for (int r = 0; r < 2; ++r) Start(r, 2, flags);
  EXPECT_EQ(Wait(procs_[1], std::chrono::seconds(40)), 3);
  EXPECT_EQ(Wait(procs_[0], std::chrono::seconds(40)), 3);
  const std::string err1 = Slurp(procs_[1].err);
  EXPECT_NE(err1.find("process 1 (rank 1 on "), std::string::npos) << err1;
  EXPECT_NE(err1.find("the gloo library failed on a thread of its own during sweep (all_reduce"),
            std::string::npos)
      << err1;
  EXPECT_NE(err1.find("op.preamble.length <= op.nbytes"), std::string::npos) << err1;
  // Process 0 names process 1's own reason, not a silence it waited out.
  const std::string err0 = Slurp(procs_[0].err);
  EXPECT_NE(err0.find("process 1 (rank 1 on "), std::string::npos) << err0;
  EXPECT_NE(err0.find("ended with its own error"), std::string::npos) << err0;
}

TEST_F(MultiProcessTest, SigtermLeavesTheCsvOutputRenamedAndMarkedIncomplete) {
  // --output is written as FILE.partial and renamed when the run ends, here by SIGTERM.
  const fs::path csv = dir_ / "results.csv";
  Start(0, 1,
        {"-t", "2", "-b", "1K", "-e", "64K", "-f", "2", "-n", "5", "-N", "0", "--format", "csv",
         "--output", csv.string()});
  const fs::path partial = csv.string() + ".partial";
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline && Count(Slurp(partial), "all_reduce,") < 6) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_FALSE(fs::exists(csv));  // not under its name while it is being written
  ::kill(procs_[0].pid, SIGINT);  // ^C
  EXPECT_EQ(Wait(procs_[0], std::chrono::seconds(30)), 130);
  EXPECT_FALSE(fs::exists(partial));
  const std::string text = Slurp(csv);
  EXPECT_GE(Count(text, "all_reduce,"), 6u) << text;
  const size_t last = text.rfind("# incomplete: ");
  ASSERT_NE(last, std::string::npos) << text;
  EXPECT_NE(text.find("ended by SIGINT", last), std::string::npos) << text;
  EXPECT_NE(Slurp(procs_[0].err).find("(exit 130)"), std::string::npos) << Slurp(procs_[0].err);
}

TEST_F(MultiProcessTest, JsonOnAFullFilesystemLeavesNoFileThatReadsAsACompleteRun) {
  // A 16 KiB tmpfs: the first documents fit, the later ones (and the last) do not.
  const fs::path small = dir_ / "small";
  fs::create_directories(small);
  if (std::system(("mount -t tmpfs -o size=16k fabricscope-test " + small.string()).c_str()) != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here (needs root): the full-disk case is not run";
  }
  const fs::path json = small / "results.json";
  Start(0, 1, {"-t", "2", "-b", "1K", "-e", "1M", "-f", "2", "-n", "2", "-J", json.string()});
  const int code = Wait(procs_[0], std::chrono::seconds(60));
  const std::string err = Slurp(procs_[0].err);
  const std::string out = Slurp(procs_[0].out);
  const std::string doc_text = Slurp(json);
  std::system(("umount " + small.string()).c_str());
  EXPECT_EQ(code, 3) << err;
  EXPECT_NE(err.find("cannot write JSON results to '" + json.string() + "'"), std::string::npos)
      << err;
  EXPECT_EQ(Count(out, "float     sum"), 11u) << out;  // every row is on stdout
  ASSERT_FALSE(doc_text.empty());
  const auto doc = nlohmann::json::parse(doc_text);
  EXPECT_EQ(doc["complete"], false) << doc_text;
  EXPECT_NE(doc["incomplete"].get<std::string>().find("had not ended"), std::string::npos);
  EXPECT_LT(doc["results"].size(), 11u);
  EXPECT_EQ(doc["out_of_bounds"]["okay"], "false");
}

TEST_F(MultiProcessTest, RankThatNeverStartsIsNamedWithinTheTimeout) {
  const std::vector<std::string> flags{"-b", "1K", "-e", "1K", "-T", "3"};
  Start(0, 3, flags);
  Start(1, 3, flags);  // rank 2 never starts
  const auto start = Clock::now();
  EXPECT_EQ(Wait(procs_[0], std::chrono::seconds(30)), 3);  // a runtime failure, not a crash
  EXPECT_EQ(Wait(procs_[1], std::chrono::seconds(30)), 3);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(20));
  const std::string err = Slurp(procs_[0].err);
  EXPECT_NE(err.find("rank 2 of 3"), std::string::npos) << err;
  EXPECT_NE(err.find("did not arrive"), std::string::npos) << err;
}

}  // namespace

namespace {

// mpirun as root on one host, as CI needs it: shared memory only (no network interface or
// /etc/hosts entry needed), no single-copy mechanism (containers lack CAP_SYS_PTRACE).
constexpr const char* kMpirun =
    "mpirun --allow-run-as-root --oversubscribe --mca btl self,vader "
    "--mca btl_vader_single_copy_mechanism none --mca mpi_yield_when_idle 1";

std::string Mpirun(int np, const std::string& flags, const fs::path& out) {
  const std::string cmd =
      "mpirun --allow-run-as-root --oversubscribe --mca btl self,vader,tcp "
      "--mca btl_tcp_if_include lo --mca oob_tcp_if_include lo -np " +
      std::to_string(np) + " " + FABRICSCOPE_BINARY + " run " + flags + " >" + out.string() +
      " 2>&1 </dev/null";
  const int status = std::system(cmd.c_str());
  return std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

class MpirunTest : public ::testing::TestWithParam<int> {};

TEST_P(MpirunTest, MpiBackendValidatesEveryCollectiveTypeAndOp) {
  const int np = GetParam();
  const fs::path out =
      fs::temp_directory_path() / ("fabricscope-mpirun-" + std::to_string(getpid()));
  const std::string code = Mpirun(
      np, "--backend mpi --collective all -d all -o all -b 1K -e 16K -f 4 -n 2 -r -1 -T 60", out);
  const std::string text = Slurp(out);
  fs::remove(out);
  EXPECT_EQ(code, "0") << text;
  EXPECT_EQ(Count(text, "# Out of bounds values : 0 OK"), 9u) << text;
  EXPECT_EQ(Count(text, "# Collective test starting:"), 9u);  // one report, from rank 0
  EXPECT_NE(text.find("backend=mpi"), std::string::npos);
  EXPECT_NE(text.find("#  Rank  " + std::to_string(np - 1)), std::string::npos) << text;
}

TEST_P(MpirunTest, GlooBackendBootstrapsThroughMpiWithThreads) {
  const int np = GetParam();
  const fs::path out =
      fs::temp_directory_path() / ("fabricscope-mpirun-g" + std::to_string(getpid()));
  const std::string code =
      Mpirun(np, "--backend gloo -t 2 --collective all -b 1K -e 16K -f 4 -n 2 -T 60", out);
  const std::string text = Slurp(out);
  fs::remove(out);
  EXPECT_EQ(code, "0") << text;
  EXPECT_EQ(Count(text, "# Out of bounds values : 0 OK"), 9u) << text;
  EXPECT_NE(text.find("#  Rank  " + std::to_string(2 * np - 1)), std::string::npos) << text;
}

INSTANTIATE_TEST_SUITE_P(Processes, MpirunTest, ::testing::Values(2, 3, 4));

// The thread level MPI was initialized at, as rank 0's JSON record gives it: each process
// of a real 2-process mpirun job asks MPI_Init_thread for it (MPI_Query_thread's answer).
std::string ThreadLevelOf(const std::string& flags) {
  const fs::path dir =
      fs::temp_directory_path() / ("fabricscope-mpilevel-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path json = dir / "r.json";
  const std::string code =
      Mpirun(2, flags + " -b 1K -e 1K -n 2 -T 60 -J " + json.string(), dir / "out");
  const std::string text = Slurp(dir / "out");
  std::string level = "exit " + code + ": " + text;
  if (code == "0") {
    const auto doc = nlohmann::json::parse(Slurp(json));
    level = doc.contains("mpi_thread_level") ? doc["mpi_thread_level"].get<std::string>()
                                             : "(no mpi_thread_level)";
  }
  fs::remove_all(dir);
  return level;
}

TEST(MpiFaultTest, APeerPostingAnotherCountEndsWithExit3NeverASignal) {
  // MPI_ERRORS_RETURN is set, and a count mismatch that leaves a rank waiting for data that
  // never comes is the -T watchdog's: a named call and exit 3; mpirun then ends the other
  // process with SIGTERM, which ends it through the same path (exit 143, named). sendrecv: a
  // mismatched MPI_Allreduce is undefined behaviour (over TCP it corrupts the heap).
  const fs::path dir =
      fs::temp_directory_path() / ("fabricscope-mpi-fault-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string code =
      Mpirun(2, "--backend mpi --collective sendrecv -b 1M -e 1M -n 5 -T 5 --inject-size-fault 1",
             dir / "out");
  const std::string out = Slurp(dir / "out");
  EXPECT_EQ(code, "3") << out;
  EXPECT_NE(out.find("fabricscope: error: rank "), std::string::npos) << out;
  EXPECT_NE(out.find("sendrecv of 262144 float elements did not complete"), std::string::npos)
      << out;
  EXPECT_EQ(out.find("signal"), std::string::npos) << out;
  fs::remove_all(dir);
}

TEST(MpiThreadLevelTest, OneRankPerProcessRunsAtMpiInitsLevelAndRankThreadsAtMultiple) {
  // One rank per process: only the thread that initialized MPI calls it, so the level of a
  // plain MPI_Init is enough, and MPI keeps off its thread-safe paths.
  EXPECT_EQ(ThreadLevelOf("--backend mpi --collective sendrecv"), "MPI_THREAD_SINGLE");
  EXPECT_EQ(ThreadLevelOf("--backend gloo -t 1"), "MPI_THREAD_SINGLE");
  // Rank threads may call MPI at once.
  EXPECT_EQ(ThreadLevelOf("--backend gloo -t 2"), "MPI_THREAD_MULTIPLE");
}

}  // namespace

namespace {

// The pids of the fabricscope processes whose command line contains `marker`.
std::vector<pid_t> RanksWith(const std::string& marker) {
  std::vector<pid_t> pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string comm = Slurp(entry.path() / "comm");
    std::string cmdline = Slurp(entry.path() / "cmdline");
    if (comm.rfind("fabricscope", 0) == 0 && cmdline.find(marker) != std::string::npos) {
      pids.push_back(std::stoi(name));
    }
  }
  return pids;
}

TEST(WatchdogTest, StuckMpiRankEndsTheJobWithinTheTimeout) {
  const fs::path dir = fs::temp_directory_path() / ("fabricscope-wd-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path json = dir / "stuck.json";
  const fs::path out = dir / "out";
  // -N 0 runs until stopped; MPI has no timeouts of its own, so only the watchdog can end it.
  const std::string cmd = std::string(kMpirun) +
                          " -np 3 " FABRICSCOPE_BINARY
                          " run --backend mpi -b 1K -e 64K -f 2 -n 5 -N 0 -T 2 -J " +
                          json.string() + " >" + out.string() + " 2>&1 </dev/null";
  std::thread job([&] { (void)std::system(cmd.c_str()); });
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline && Count(Slurp(out), "float     sum") < 8) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::vector<pid_t> ranks = RanksWith(json.string());
  ASSERT_EQ(ranks.size(), 3u) << Slurp(out);
  std::sort(ranks.begin(), ranks.end());
  ::kill(ranks.back(), SIGSTOP);  // alive but stuck: no error will ever come from MPI
  const auto stopped_at = Clock::now();
  job.join();
  EXPECT_LT(Clock::now() - stopped_at, std::chrono::seconds(30));
  for (pid_t p : ranks) ::kill(p, SIGKILL);  // in case mpirun left the stopped one
  const std::string text = Slurp(out);
  EXPECT_NE(text.find("did not complete within 3.0 s"), std::string::npos) << text;
  EXPECT_NE(text.find("a peer is stuck or dead"), std::string::npos) << text;
  const auto doc = nlohmann::json::parse(Slurp(json));  // completed sizes are on disk
  EXPECT_GE(doc["results"].size(), 8u);
  ASSERT_EQ(doc["errors"].size(), 1u) << doc.dump();  // and why they stop
  EXPECT_NE(doc["errors"][0].get<std::string>().find("did not complete"), std::string::npos);
  EXPECT_FALSE(doc["end_time"].is_null());
  fs::remove_all(dir);
}

}  // namespace
