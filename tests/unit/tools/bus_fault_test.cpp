// The SIGBUS handler of output.cpp: a mapped input that shrinks under its reader ends the run
// with an error naming the file (exit status 1), not "Bus error" (135). Each case runs in a
// child process, which the fault ends.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "core/file_io.hpp"
#include "output.hpp"
#include "test_scratch.hpp"

namespace fs = std::filesystem;
using namespace dlprep;

namespace {

// Runs `body` in a child whose stderr goes to `err`; returns its wait status.
template <typename Body>
int in_child(const fs::path& err, Body body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    // The descriptor, not freopen: stderr's FILE stays unbuffered, as it is in dlprep.
    const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ::dup2(fd, STDERR_FILENO) < 0) ::_exit(99);
    body();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("a mapped input truncated while it is read is an error naming it, exit status 1") {
  const fs::path dir = test_scratch::fresh("tools", "bus_fault");
  const fs::path input = dir / "shrinking.bin";
  std::ofstream(input, std::ios::binary) << std::string(1 << 16, 'x');
  const int status = in_child(dir / "err.txt", [&] {
    cli::install_interrupt_handler();
    cli::set_interrupt_report("test", false);
    MappedFile file(input);
    fs::resize_file(input, 0);
    volatile uint8_t byte = file.bytes()[40000];  // past the new end: SIGBUS
    (void)byte;
  });
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);
  CHECK(slurp(dir / "err.txt") == "dlprep: error: test: " + input.string() +
                                      ": the file shrank while it was being read (truncated by "
                                      "another process?)\n");
}

TEST_CASE("a fault on a worker thread ends the run the same way, its temporary files removed") {
  const fs::path dir = test_scratch::fresh("tools", "bus_fault_worker");
  const fs::path input = dir / "shrinking.bin";
  std::ofstream(input, std::ios::binary) << std::string(1 << 16, 'x');
  const int status = in_child(dir / "err.txt", [&] {
    cli::install_interrupt_handler();
    cli::set_interrupt_report("test", false);
    AtomicFile output(dir / "out.bin");  // an output being written: its temp file is registered
    output.write(ByteSpan(reinterpret_cast<const uint8_t*>("abc"), 3));
    MappedFile file(input);
    fs::resize_file(input, 0);
    std::thread([&] {
      volatile uint8_t byte = file.bytes()[40000];
      (void)byte;
    }).join();
  });
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);
  CHECK(slurp(dir / "err.txt").find(input.string() + ": the file shrank") != std::string::npos);
  for (const auto& e : fs::directory_iterator(dir)) {
    INFO(e.path().string(), " was left");
    CHECK(e.path().filename().string().find("out.bin") == std::string::npos);
  }
}

TEST_CASE("a SIGBUS outside a mapped input keeps its default action") {
  const fs::path dir = test_scratch::fresh("tools", "bus_other");
  const int status = in_child(dir / "err.txt", [] {
    cli::install_interrupt_handler();
    ::raise(SIGBUS);
  });
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGBUS);
}
