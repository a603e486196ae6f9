#include "core/file_io.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "core/error.hpp"
#include "test_scratch.hpp"

using namespace dlprep;
namespace fs = std::filesystem;

namespace {
fs::path scratch(const std::string& name) { return test_scratch::fresh("file_io", name); }
}  // namespace

TEST_CASE("an I/O error keeps the errno behind it, also with context added") {
  fs::path missing = scratch("errno") / "missing";
  try {
    MappedFile file(missing);
    FAIL("opened a missing file");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::io);
    CHECK(e.system_error() == ENOENT);
    CHECK(e.with_context("sample x").system_error() == ENOENT);
  }
  CHECK(Error(Errc::corrupt_data, "bad").system_error() == 0);
}

TEST_CASE("write_file_atomic creates parent folders and read_file reads it back") {
  fs::path dir = scratch("roundtrip");
  Bytes data = {1, 2, 3, 4, 5};
  write_file_atomic(dir / "a" / "b" / "x.bin", data);
  CHECK(read_file(dir / "a" / "b" / "x.bin") == data);
  MappedFile m(dir / "a" / "b" / "x.bin");
  CHECK(m.bytes().size() == 5);
}

TEST_CASE("read_file_into reuses its buffer for files of every size, and reads what a FIFO gives") {
  fs::path dir = scratch("into");
  Bytes big(300000), small = {7, 8, 9};
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 31);
  write_file_atomic(dir / "big", big);
  write_file_atomic(dir / "small", small);
  write_file_atomic(dir / "empty", {});
  Bytes buffer;
  read_file_into(dir / "big", buffer);
  CHECK(buffer == big);
  const uint8_t* memory = buffer.data();
  read_file_into(dir / "small", buffer);
  CHECK(buffer == small);
  CHECK(buffer.data() == memory);  // no new allocation for a smaller file
  read_file_into(dir / "empty", buffer);
  CHECK(buffer.empty());
  read_file_into(dir / "big", buffer);
  CHECK(buffer == big);
  CHECK_THROWS_AS(read_file_into(dir, buffer), Error);  // a directory

  const fs::path fifo = dir / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::thread writer([&] { write_file_atomic(fifo, big); });
  read_file_into(fifo, buffer);
  writer.join();
  CHECK(buffer == big);
}

TEST_CASE("an AtomicFile destroyed without commit leaves nothing behind") {
  fs::path dir = scratch("abandon");
  {
    AtomicFile f(dir / "out.bin");
    Bytes data(100, 7);
    f.write(data);
  }
  CHECK(fs::is_empty(dir));
}

TEST_CASE("AtomicFile::write_at overwrites bytes already written, before the rename") {
  fs::path dir = scratch("write_at");
  AtomicFile f(dir / "out.bin");
  f.write(Bytes(8, 1));
  f.write(Bytes(4, 2));
  f.write_at(2, Bytes{9, 9, 9});
  CHECK(!fs::exists(dir / "out.bin"));
  f.write(Bytes{3});  // still appends at the end
  f.commit();
  CHECK(read_file(dir / "out.bin") == Bytes{1, 1, 9, 9, 9, 1, 1, 1, 2, 2, 2, 2, 3});
}

TEST_CASE("an AtomicFile whose writeback started early still holds every byte, headers too") {
  // Past 8 MiB, write() starts the writeback of what it wrote (sync_file_range): the pages
  // under way must still take a later write_at, and a deferred file its diverging bytes.
  fs::path dir = scratch("writeback");
  Bytes expected;
  AtomicFile f(dir / "out.bin");
  for (uint8_t piece = 0; piece < 7; ++piece) {
    const Bytes bytes(3u << 20, piece);
    f.write(bytes);
    expected.insert(expected.end(), bytes.begin(), bytes.end());
  }
  f.write_at(1, Bytes{42, 43});
  expected[1] = 42;
  expected[2] = 43;
  f.commit();
  CHECK(read_file(dir / "out.bin") == expected);

  AtomicFile again(dir / "out.bin", AtomicFile::Mode::defer);
  again.write(ByteSpan(expected).first(10u << 20));
  expected[(10u << 20) + 5] ^= 1;
  again.write(ByteSpan(expected).subspan(10u << 20));
  again.commit();
  CHECK(read_file(dir / "out.bin") == expected);
}

TEST_CASE("a deferred AtomicFile makes no temp file while it writes the target's own bytes") {
  fs::path dir = scratch("defer");
  const fs::path out = dir / "index.jsonl";
  const Bytes old = {1, 2, 3, 4, 5, 6};
  write_file_atomic(out, old);
  const auto count = [&] {
    return std::distance(fs::directory_iterator(dir), fs::directory_iterator());
  };
  const auto mtime = fs::last_write_time(out);
  {  // the same bytes, in other pieces: nothing is made, same_as_target, commit changes nothing
    AtomicFile f(out, AtomicFile::Mode::defer);
    f.write(Bytes{1, 2});
    f.write(Bytes{3, 4, 5, 6});
    CHECK(count() == 1);
    CHECK(f.same_as_target());
    f.commit();
    CHECK(fs::last_write_time(out) == mtime);
  }
  for (const Bytes& now :
       {Bytes{1, 2, 3, 9}, Bytes{1, 2, 3}, Bytes{1, 2, 3, 4, 5, 6, 7}, Bytes{}}) {
    CAPTURE(now.size());
    write_file_atomic(out, old);
    AtomicFile f(out, AtomicFile::Mode::defer);
    f.write(ByteSpan(now.data(), std::min<size_t>(now.size(), 2)));
    if (now.size() > 2) f.write(ByteSpan(now.data() + 2, now.size() - 2));
    CHECK_FALSE(f.same_as_target());
    f.commit();
    CHECK(read_file(out) == now);
    CHECK(count() == 1);  // no temp file left
  }
  // A new target is written as usual.
  AtomicFile fresh(dir / "new.bin", AtomicFile::Mode::defer);
  fresh.write(Bytes{7});
  fresh.commit();
  CHECK(read_file(dir / "new.bin") == Bytes{7});
}

TEST_CASE("a deferred AtomicFile compares files larger than its read window") {
  // The target is read 64 KiB at a time: pieces that straddle windows, and differences past
  // the first window, in the target's last byte and past its end.
  fs::path dir = scratch("defer-large");
  const fs::path out = dir / "index.jsonl";
  Bytes old(200'003);
  for (size_t i = 0; i < old.size(); ++i) old[i] = static_cast<uint8_t>(i * 7 + i / 251);
  const auto write_in_pieces = [](AtomicFile& f, const Bytes& bytes) {
    for (size_t at = 0, piece = 1; at < bytes.size(); at += piece, piece = piece * 3 + 1)
      f.write(ByteSpan(bytes).subspan(at, std::min(piece, bytes.size() - at)));
  };
  write_file_atomic(out, old);
  {
    AtomicFile f(out, AtomicFile::Mode::defer);
    write_in_pieces(f, old);
    CHECK(f.same_as_target());
  }
  for (const size_t changed : {size_t{70'000}, old.size() - 1, old.size()}) {
    CAPTURE(changed);
    Bytes now = old;
    if (changed < now.size())
      now[changed] ^= 1;
    else
      now.push_back(5);
    write_file_atomic(out, old);
    AtomicFile f(out, AtomicFile::Mode::defer);
    write_in_pieces(f, now);
    CHECK_FALSE(f.same_as_target());
    f.commit();
    CHECK(read_file(out) == now);
  }
  // Not deferred: the temp file is compared with the target the same way.
  for (const bool same : {true, false}) {
    write_file_atomic(out, old);
    Bytes now = old;
    if (!same) now[old.size() - 2] ^= 0x80;
    AtomicFile f(out);
    write_in_pieces(f, now);
    CHECK(f.same_as_target() == same);
  }
}

TEST_CASE("reading a missing file throws an io error naming the path") {
  try {
    read_file("/nonexistent/dlprep/file.png");
    FAIL("no throw");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::io);
    CHECK(std::string(e.what()).find("/nonexistent/dlprep/file.png") != std::string::npos);
  }
}

TEST_CASE("read_file reads no more than its bound, from a file or an endless stream") {
  const fs::path dir = scratch("read-bound");
  write_file_atomic(dir / "a", Bytes(1000, 7));
  CHECK(read_file(dir / "a", 1000).size() == 1000);
  for (const fs::path& path : {dir / "a", fs::path("/dev/zero")}) {
    try {
      (void)read_file(path, 999);
      FAIL("read past the bound");
    } catch (const Error& e) {
      CHECK(e.code() == Errc::limit_exceeded);
      CHECK(std::string(e.what()) ==
            path.string() + ": larger than 999 bytes, far more than such a file holds");
    }
  }
}

TEST_CASE("an empty file maps to an empty span") {
  fs::path dir = scratch("empty");
  write_file_atomic(dir / "e", Bytes{});
  MappedFile m(dir / "e");
  CHECK(m.bytes().empty());
}

TEST_CASE("is_up_to_date follows make's rule") {
  fs::path dir = scratch("uptodate");
  write_file_atomic(dir / "in", Bytes{1});
  CHECK_FALSE(is_up_to_date(dir / "out", {dir / "in"}));
  write_file_atomic(dir / "out", Bytes{2});
  CHECK(is_up_to_date(dir / "out", {dir / "in"}));
  fs::last_write_time(dir / "in", fs::last_write_time(dir / "out") + std::chrono::seconds(5));
  CHECK_FALSE(is_up_to_date(dir / "out", {dir / "in"}));
}

TEST_CASE("a FIFO target is written in place, not replaced by a renamed temp file") {
  fs::path dir = scratch("fifo");
  fs::path fifo = dir / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  Bytes received;
  std::thread reader([&] { received = read_file(fifo); });
  Bytes data(1000, 42);
  write_file_atomic(fifo, data);
  reader.join();
  CHECK(received == data);
  CHECK(fs::is_fifo(fifo));
  CHECK_FALSE(is_up_to_date(fifo, {}));
}

TEST_CASE("the descriptor helpers read to the end, from an offset, and name the path on failure") {
  fs::path dir = scratch("fd_helpers");
  Bytes data(100000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
  int fd = ::open((dir / "f").c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  write_all(fd, data, dir / "f");
  ::close(fd);

  fd = ::open((dir / "f").c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  Bytes got(data.size() + 10);
  CHECK(read_up_to(fd, got.data(), got.size(), dir / "f") == data.size());  // short at the end
  CHECK(std::equal(data.begin(), data.end(), got.begin()));
  CHECK(read_some(fd, got.data(), got.size(), dir / "f") == 0);
  CHECK(pread_up_to(fd, got.data(), 10, 99995, dir / "f") == 5);
  CHECK(std::equal(data.begin() + 99995, data.end(), got.begin()));
  ::close(fd);

  // A read from a write-only descriptor fails: the error names the path and the reason.
  fd = ::open((dir / "f").c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  try {
    read_some(fd, got.data(), 1, dir / "f");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::io);
    CHECK(std::string(e.what()).find((dir / "f").string() + ": read failed: ") == 0);
  }
  ::close(fd);
  fd = ::open((dir / "f").c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  try {
    write_all(fd, data, dir / "f");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find((dir / "f").string() + ": write failed: ") == 0);
  }
  ::close(fd);
}

TEST_CASE("OutputDirectory discards only the empty directories it created") {
  fs::path dir = scratch("output_dir");
  SUBCASE("created with its parents, and nothing written: all of it goes") {
    OutputDirectory out(dir / "a" / "b");
    CHECK(fs::is_directory(dir / "a" / "b"));
    fs::create_directories(dir / "a" / "b" / "day_0");  // an empty subdirectory of the run
    out.discard_if_empty();
    CHECK(!fs::exists(dir / "a"));
    CHECK(fs::exists(dir));
  }
  SUBCASE("a file written: the directories that hold it stay, the empty ones go") {
    OutputDirectory out(dir / "a" / "b");
    fs::create_directories(dir / "a" / "empty");
    write_file_atomic(dir / "a" / "b" / "state.json", ByteSpan());
    out.discard_if_empty();
    CHECK(fs::exists(dir / "a" / "b" / "state.json"));
    CHECK(!fs::exists(dir / "a" / "empty"));
  }
  SUBCASE("a directory that existed is never removed") {
    fs::create_directories(dir / "kept");
    OutputDirectory out(dir / "kept");
    out.discard_if_empty();
    CHECK(fs::is_directory(dir / "kept"));
  }
  SUBCASE("a path under a file cannot be created: an io error naming it") {
    write_file_atomic(dir / "file", ByteSpan());
    const std::string expected = (dir / "file" / "x").string() + ": cannot create";
    CHECK_THROWS_WITH_AS(OutputDirectory(dir / "file" / "x"), doctest::Contains(expected.c_str()),
                         Error);
  }
}

TEST_CASE("DirectoryLock lets one run at a time write into a directory") {
  fs::path dir = scratch("lock");
  {
    DirectoryLock first(dir);
    try {
      DirectoryLock second(dir);
      FAIL("the second lock was granted");
    } catch (const Error& e) {
      CHECK(e.code() == Errc::io);
      CHECK(std::string(e.what()) == dir.string() + ": another dlprep run is writing into it");
    }
  }
  DirectoryLock again(dir);  // released with the first
  CHECK(fs::is_empty(dir));  // and it left no file
  CHECK_THROWS_AS(DirectoryLock(dir / "missing"), Error);
}

TEST_CASE("a file whose name uses all of NAME_MAX is written through a temp file that fits") {
  fs::path dir = scratch("long-name");
  const std::string name(255, 'n');  // ".NAME.tmp.XXXXXX" would be 267 bytes
  const Bytes data = {'d', 'a', 't', 'a'};
  write_file_atomic(dir / name, data);
  CHECK(fs::file_size(dir / name) == 4);
  AtomicFile kept(dir / name);
  kept.write(data);
  kept.keep();
  const std::string temp = kept.temp_path();
  CHECK(is_temp_file_name(fs::path(temp).filename()));
  CHECK(remove_dead_temp_files(dir, name, temp) == 0);  // the one continued
  CHECK(remove_dead_temp_files(dir, name) == 1);
}

TEST_CASE("remove_dead_temp_files removes what killed AtomicFiles left, and nothing else") {
  fs::path dir = scratch("dead-temps");
  fs::create_directories(dir / "sub");
  for (const char* name : {".a.npy.tmp.AbC123", ".b.bin.tmp.Zz9876", "a.npy", ".a.npy.tmp",
                           ".a.npy.tmp.toolong7", "sub/.c.tmp.Qq1234"})
    write_file_atomic(dir / name, ByteSpan());
  CHECK(remove_dead_temp_files(dir, "b.bin") == 1);  // that target's only
  CHECK(fs::exists(dir / ".a.npy.tmp.AbC123"));
  CHECK(remove_dead_temp_files(dir) == 1);
  CHECK_FALSE(fs::exists(dir / ".a.npy.tmp.AbC123"));
  for (const char* kept : {"a.npy", ".a.npy.tmp", ".a.npy.tmp.toolong7", "sub/.c.tmp.Qq1234"})
    CHECK_MESSAGE(fs::exists(dir / kept), kept);  // another name, or below the directory
}

TEST_CASE("a TempDirectory removes the folders of its prefix that dead processes left long ago") {
  fs::path dir = scratch("dead-temp-dirs");
  const auto age = [](const fs::path& p, std::chrono::minutes minutes) {
    fs::last_write_time(p, fs::file_time_type::clock::now() - minutes);
  };
  // 999999999 is above any pid_max (2^22): no process has it.
  const std::string mine = "work-" + std::to_string(::getpid()) + "-7";
  for (const std::string& name : {std::string("work-999999999-0"), std::string("work-999999999-1"),
                                  mine, std::string("work-x-0"), std::string("other-999999999-0")})
    fs::create_directories(dir / name / "inside");
  age(dir / "work-999999999-0", std::chrono::minutes(20));
  age(dir / mine, std::chrono::minutes(20));
  age(dir / "work-x-0", std::chrono::minutes(20));
  age(dir / "other-999999999-0", std::chrono::minutes(20));
  {
    TempDirectory made(dir, "work");
    CHECK(fs::is_directory(made.path()));
  }
  CHECK_FALSE(fs::exists(dir / "work-999999999-0"));  // dead, and old
  CHECK(fs::exists(dir / "work-999999999-1"));        // dead, but maybe another namespace's, busy
  CHECK(fs::exists(dir / mine));                      // a live process's
  CHECK(fs::exists(dir / "work-x-0"));                // not PREFIX-PID-K
  CHECK(fs::exists(dir / "other-999999999-0"));       // another prefix
}

TEST_CASE("remove_unlocked_temp_files spares an open AtomicFile's temp file") {
  fs::path dir = scratch("unlocked-temps");
  const auto all = [](const std::string&) { return true; };
  AtomicFile live(dir / "live.l3");
  live.write(Bytes{1, 2, 3});
  std::string dead_temp;
  {
    AtomicFile dead(dir / "dead.l3");
    dead.write(Bytes{4});
    dead.keep();  // as a killed process leaves it: closed, unlocked, not removed
    dead_temp = dead.temp_path();
  }
  CHECK(fs::exists(dead_temp));
  // Written just now: maybe a live run's between mkstemp and flock, so spared.
  CHECK(remove_unlocked_temp_files(dir, all) == 0);
  const auto an_hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
  fs::last_write_time(dead_temp, an_hour_ago);
  fs::last_write_time(live.temp_path(), an_hour_ago);
  CHECK(remove_unlocked_temp_files(dir, [](const std::string& stem) { return stem == "x"; }) == 0);
  CHECK(remove_unlocked_temp_files(dir, all) == 1);
  CHECK_FALSE(fs::exists(dead_temp));
  CHECK(fs::exists(live.temp_path()));
  live.commit();
  CHECK(read_file(dir / "live.l3") == Bytes{1, 2, 3});
}

TEST_CASE("a mapped file's released pages read back the same bytes") {
  fs::path dir = scratch("release-pages");
  Bytes data(5 * 4096 + 123);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 13 + i / 4096);
  write_file_atomic(dir / "f", data);
  MappedFile file(dir / "f");
  CHECK(std::equal(data.begin(), data.end(), file.bytes().begin()));
  file.release_pages(100, 3 * 4096 + 5);  // only the whole pages inside
  file.release_pages(0, data.size() + 999);
  file.release_pages(7, 7);
  CHECK(std::equal(data.begin(), data.end(), file.bytes().begin(), file.bytes().end()));
}

TEST_CASE("a deferred AtomicFile whose target another program writes meanwhile refuses to commit") {
  // Past the 64 KiB window, so that the bytes compared are not all still in memory.
  const fs::path dir = scratch("defer-changed");
  const fs::path out = dir / "index.jsonl";
  Bytes ours(200000);
  for (size_t i = 0; i < ours.size(); ++i) ours[i] = static_cast<uint8_t>(i * 7);
  const Bytes theirs(ours.size(), 'B');
  SUBCASE("rewritten in place, the same size") {
    write_file_atomic(out, ours);
    AtomicFile f(out, AtomicFile::Mode::defer);
    f.write(ours);
    {
      std::ofstream rewrite(out, std::ios::binary | std::ios::in | std::ios::out);
      rewrite.write(reinterpret_cast<const char*>(theirs.data()), std::streamsize(theirs.size()));
    }
    CHECK_FALSE(f.same_as_target());
    CHECK_THROWS_WITH_AS(
        f.commit(),
        (out.string() + ": changed by another program while compared; run again").c_str(), Error);
    CHECK(read_file(out) == theirs);  // the other program's file, as it wrote it
  }
  SUBCASE("its mode and links changed, not its bytes: still current") {
    write_file_atomic(out, ours);
    AtomicFile f(out, AtomicFile::Mode::defer);
    f.write(ours);
    fs::permissions(out, fs::perms(0600));
    fs::create_hard_link(out, dir / "snapshot");
    CHECK(f.same_as_target());
    CHECK_NOTHROW(f.commit());
    fs::remove(dir / "snapshot");
  }
  SUBCASE("grown, then differing from what is written") {
    write_file_atomic(out, ours);
    AtomicFile f(out, AtomicFile::Mode::defer);
    f.write(ByteSpan(ours).first(150000));
    {
      std::ofstream grow(out, std::ios::binary | std::ios::app);
      grow.put(9);
    }
    CHECK_THROWS_AS(f.write(theirs), Error);
    CHECK(read_file(out).size() == ours.size() + 1);
  }
  size_t files = 0;  // and no temp file stays
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file() ? 1 : 0;
  CHECK(files == 1);
}

TEST_CASE("flush_to_storage flushes files and their directories, skips what is no file") {
  const fs::path dir = scratch("flush");
  write_file_atomic(dir / "a", ByteSpan(reinterpret_cast<const uint8_t*>("x"), 1));
  fs::create_symlink("a", dir / "link");
  CHECK_NOTHROW(flush_to_storage({dir / "a", dir / "link", dir / "missing", "/dev/null"}));
  // A directory that can be written into but not listed (as root, permissions do not bind).
  fs::create_directories(dir / "drop");
  write_file_atomic(dir / "drop" / "b", ByteSpan(reinterpret_cast<const uint8_t*>("y"), 1));
  fs::permissions(dir / "drop", fs::perms(0733));
  CHECK_NOTHROW(flush_to_storage({dir / "drop" / "b"}));
  fs::permissions(dir / "drop", fs::perms(0755));
  try {
    flush_to_storage({dir / "a" / "b"});  // (a is no directory)
    FAIL("a path through a file was flushed");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::io);
    CHECK(std::string(e.what()).find((dir / "a" / "b").string() + ": cannot flush to storage") !=
          std::string::npos);
  }
}

TEST_CASE("a chain of links that ends at an open pipe is written into the pipe") {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const fs::path dir = scratch("link-chain-to-pipe");
  fs::create_symlink("/dev/fd/" + std::to_string(pipe_fds[1]), dir / "second");
  fs::create_symlink("second", dir / "first");  // first -> second -> /dev/fd/N -> pipe:[...]
  write_file_atomic(dir / "first", ByteSpan(reinterpret_cast<const uint8_t*>("abc"), 3));
  ::close(pipe_fds[1]);
  char got[8] = {};
  CHECK(::read(pipe_fds[0], got, sizeof got) == 3);
  CHECK(std::string(got) == "abc");
  ::close(pipe_fds[0]);
  CHECK(fs::is_symlink(dir / "first"));
}

TEST_CASE("a link whose target goes up from a linked folder replaces the file the kernel finds") {
  const fs::path dir = fs::canonical(scratch("link-dotdot"));
  fs::create_directories(dir / "real" / "sub");
  fs::create_directories(dir / "a");
  fs::create_directory_symlink(dir / "real" / "sub", dir / "a" / "sub");
  const Bytes unrelated{'u'};
  for (const char* name : {"x", "y"}) write_file_atomic(dir / "a" / name, unrelated);
  // a/o -> sub/../x and b/o -> DIR/a/sub/../y: the kernel goes up from real/sub, to real/.
  fs::create_symlink("sub/../x", dir / "a" / "o");
  fs::create_directories(dir / "b");
  fs::create_symlink(dir / "a" / "sub" / ".." / "y", dir / "b" / "o");
  const Bytes out{'o', 'u', 't'};
  write_file_atomic(dir / "a" / "o", out);
  write_file_atomic(dir / "b" / "o", out);
  CHECK(read_file(dir / "real" / "x") == out);
  CHECK(read_file(dir / "real" / "y") == out);
  CHECK(read_file(dir / "a" / "x") == unrelated);
  CHECK(read_file(dir / "a" / "y") == unrelated);
  CHECK(fs::is_symlink(dir / "a" / "o"));
  CHECK(fs::is_symlink(dir / "b" / "o"));
}

TEST_CASE("a link into /dev/shm is followed and its file replaced, not appended to") {
  if (!fs::is_directory("/dev/shm")) {
    MESSAGE("skipped: no /dev/shm");
    return;
  }
  const fs::path dir = scratch("shm-link");
  const fs::path shm = fs::path("/dev/shm") / ("dlprep-test-" + std::to_string(::getpid()));
  fs::create_symlink(shm, dir / "out");
  for (int run = 0; run < 2; ++run)
    write_file_atomic(dir / "out", ByteSpan(reinterpret_cast<const uint8_t*>("abc"), 3));
  CHECK(fs::is_symlink(dir / "out"));
  CHECK(read_file(shm) == Bytes{'a', 'b', 'c'});
  fs::remove(shm);
}

TEST_CASE("convert_unchanged converts again, from the new file, a source changed meanwhile") {
  const fs::path dir = scratch("unchanged");
  const fs::path source = dir / "in.png";
  write_file_atomic(source, Bytes{1, 2, 3});
  const auto replace = [&](uint8_t value) {  // a rename over it, as editors and rsync do
    write_file_atomic(dir / "new", Bytes{value});
    fs::rename(dir / "new", source);
  };

  std::vector<std::pair<bool, uint8_t>> calls;  // (again, the first byte converted)
  int discards = 0;
  const auto convert_changing = [&](int changes) {
    return [&, changes](bool again) {
      calls.emplace_back(again, read_file(source)[0]);
      if (static_cast<int>(calls.size()) <= changes)
        replace(static_cast<uint8_t>(10 + calls.size()));
      return true;
    };
  };

  const auto stamp = convert_unchanged(source, convert_changing(0), [&] { ++discards; });
  REQUIRE(stamp);
  CHECK(*stamp == *file_stamp(source));
  CHECK(calls == std::vector<std::pair<bool, uint8_t>>{{false, 1}});
  CHECK(discards == 0);

  calls.clear();
  const auto second = convert_unchanged(source, convert_changing(2), [&] { ++discards; });
  // Changed during the first two conversions: the third reads the last file, and holds.
  CHECK(calls == std::vector<std::pair<bool, uint8_t>>{{false, 1}, {true, 11}, {true, 12}});
  CHECK(discards == 2);
  REQUIRE(second);
  CHECK(*second == *file_stamp(source));

  calls.clear();
  discards = 0;
  CHECK_THROWS_WITH_AS(convert_unchanged(source, convert_changing(3), [&] { ++discards; }),
                       doctest::Contains("changed while it was being converted, 3 times"), Error);
  CHECK(discards == 3);  // no output of a changed source is left

  calls.clear();
  // A conversion that wrote nothing to go stale (skipped, or a stream) is not checked.
  CHECK_FALSE(convert_unchanged(
      source,
      [&](bool) {
        replace(99);
        return false;
      },
      [&] { ++discards; }));
  CHECK(discards == 3);
}
