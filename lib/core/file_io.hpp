// Reading whole files (mmap or stdin) and writing them atomically (temp file + rename).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/limits.hpp"
#include "core/mapped_files.hpp"

namespace dlprep {

using Bytes = std::vector<uint8_t>;
using ByteSpan = std::span<const uint8_t>;

/// The bytes of a text (to write it).
inline ByteSpan bytes_of(std::string_view text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}
ByteSpan bytes_of(std::string&&) = delete;  // a temporary's bytes would not outlive the call

/// Called with the first bytes of a stream (kHeadCheckBytes, or all of a shorter one) before the
/// rest is read; it throws to refuse the stream, so that a pipe of something else (/dev/zero, a
/// video) fails at once rather than after reading up to 16 GiB. It returns the stream's size
/// where its head declares one (an L3 header's file size): a stream that runs past it fails
/// there (Error(corrupt_data)), not at its end.
using HeadCheck = std::function<std::optional<uint64_t>(ByteSpan head)>;
inline constexpr size_t kHeadCheckBytes = 64;

/// A read-only view of a whole file: memory-mapped when the file is regular, otherwise (a pipe,
/// "-" for stdin) read into memory, after check_head accepts its first bytes. Throws Error(io)
/// naming the path on failure.
class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path, const HeadCheck& check_head = {});
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ByteSpan bytes() const { return {data_, size_}; }
  /// Takes the pages of bytes [from, to) out of the process's memory (its RSS), for a file read
  /// once from start to end; touched again, they come back from the page cache. Thread-safe.
  void release_pages(uint64_t from, uint64_t to) const;

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  std::optional<MappedFileRegistration> registration_;  // names the file if it shrinks under us
  Bytes owned_;
};

/// Reads a whole file ("-" reads stdin). Throws Error(io), and Error(limit_exceeded) for one
/// larger than `max_bytes` (a stream is read no further): a small file of metadata that is a
/// link to /dev/zero must not grow to 16 GiB first.
Bytes read_file(const std::filesystem::path& path, uint64_t max_bytes = limits::kMaxFileBytes);
/// Like read_file, into `out`, reusing its memory: a buffer kept for a thread's files spares a
/// fresh, page-faulting allocation per file. A stream is read after check_head accepts its
/// first bytes, as in MappedFile.
void read_file_into(const std::filesystem::path& path, Bytes& out, const HeadCheck& check_head = {},
                    uint64_t max_bytes = limits::kMaxFileBytes);

/// One read(2) of up to `capacity` bytes, retried when a signal interrupts it: the bytes read, 0
/// at the end of the file. Throws Error(io) "path: read failed: …".
size_t read_some(int fd, uint8_t* out, size_t capacity, const std::filesystem::path& path);
/// read_some until `capacity` bytes or the end of the file; returns the bytes read.
size_t read_up_to(int fd, uint8_t* out, size_t capacity, const std::filesystem::path& path);
/// pread(2) until `capacity` bytes from `offset` or the end of the file; returns the bytes read.
size_t pread_up_to(int fd, uint8_t* out, size_t capacity, uint64_t offset,
                   const std::filesystem::path& path);
/// Writes every byte, retried when interrupted. Throws Error(io) "path: write failed: …".
void write_all(int fd, ByteSpan bytes, const std::filesystem::path& path);

/// A file written under a temporary name in the target's directory and renamed into place by
/// commit(). If it is destroyed without commit(), or the process gets SIGINT (see
/// remove_pending_temp_files), the temporary file is removed: no half-written output is ever seen.
/// An existing target that is a device or FIFO (/dev/null, a pipe), or a link to an open file of
/// the process (/dev/stdout, /dev/fd/N, /proc/self/fd/N: appended to), is written in place
/// instead; through any other link (also one into /dev/shm), the file it
/// points to is replaced and the link kept.
class AtomicFile {
 public:
  /// `defer`: while the bytes written are the start of the existing target's, no temporary file
  /// is made; it is made (with those bytes) at the first difference. A rerun that writes what is
  /// already there thus needs no write access (a read-only published dataset). write_at() is not
  /// available then.
  enum class Mode { now, defer };
  explicit AtomicFile(const std::filesystem::path& target, Mode mode = Mode::now);
  /// Continues `kept`, the temp file of an earlier AtomicFile of `target` that keep() left, cut
  /// to its first `bytes` (the earlier run's checkpoint vouches for them): a long output resumes
  /// after a crash. The file stays kept. Throws Error(io) when `kept` is not such a file in the
  /// target's directory, or is shorter than `bytes`.
  AtomicFile(const std::filesystem::path& target, const std::filesystem::path& kept,
             uint64_t bytes);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  /// Appends bytes, starting the writeback of every 8 MiB written (a later flush waits less).
  /// Throws Error(io) (e.g. disk full) naming the target.
  void write(ByteSpan bytes);
  /// Overwrites bytes already written, at `offset` (a header whose counts are known only at the
  /// end). Throws Error(io), also for a device or FIFO target.
  void write_at(uint64_t offset, ByteSpan bytes);
  /// Closes the file, still under its temporary name (files finished long before they may appear
  /// need no descriptor meanwhile); nothing can be written after it. Throws Error(io).
  void close();
  /// Flushes, fsyncs nothing (speed; rename is still atomic), closes and renames. Throws Error(io).
  void commit();
  /// Closes the file, still under its temporary name, and tells whether the target already holds
  /// exactly these bytes, when a commit would change nothing but the target's mtime: a caller
  /// that skips it (the temp file goes with the object) keeps reruns from touching their outputs.
  /// Throws Error(io).
  bool same_as_target();
  /// From now on the temp file stays when this object dies uncommitted or the process gets
  /// SIGINT: a checkpoint names it (temp_path()) for a rerun to continue.
  void keep();
  /// The temporary file; empty for a device or FIFO (written in place) and after commit().
  const std::string& temp_path() const { return temp_; }
  /// What commit() renames the temp file to: the target, or the file a link target names.
  const std::filesystem::path& final_path() const { return final_; }

 private:
  void open_temp();
  /// Mode::defer: the temp file made now, holding the `matched_` bytes written so far.
  void diverge();

  std::filesystem::path target_;  // as given, for messages
  std::filesystem::path final_;   // what the temp file is renamed to: the target, links resolved
  std::string temp_;
  int fd_ = -1;
  class WindowedFile;                       // a file compared a window at a time
  std::unique_ptr<WindowedFile> existing_;  // Mode::defer: the target, until the first difference
  uint64_t matched_ = 0;                  // bytes written, equal to the start of existing_
  bool kept_ = false;                     // keep(): the temp file outlives the object
  uint64_t unstarted_ = 0;                // bytes written since writeback was last started
};

/// The file a chain of symbolic links names (also one not there yet: what writing through the
/// link creates), or `path` itself when it is no link.
std::filesystem::path link_destination(const std::filesystem::path& path);

/// Whether `path` is `dir` or below it, links resolved (neither need exist; a link to a file not
/// there yet counts where the file would be).
bool is_within(const std::filesystem::path& path, const std::filesystem::path& dir);

/// The first of `dir` and the folders above it that exists and is not a directory (a file where
/// a folder must be: "-o file/", "-o file/sub"; a link to nothing counts), written without a
/// trailing '/'; nullopt when none is.
std::optional<std::filesystem::path> file_in_the_way(const std::filesystem::path& dir);

/// Creates a directory and its missing parents, however deep (libstdc++'s create_directories
/// refuses more than 1000 missing levels with a false "File name too long"). Throws Error(io)
/// "DIR: cannot create directory: …".
void make_directories(const std::filesystem::path& dir);

/// Writes the bytes of `files` (the files links name) and their directory entries to storage:
/// fdatasync of each, then fsync of each directory holding one and, once a process, of that
/// directory's parent (where a directory cannot be opened, for want of read permission, syncfs
/// of its file system instead). A file that is not
/// there or not a regular file (a device, a FIFO) is skipped. A checkpoint that vouches for
/// outputs is written after it, so that after a power loss no checkpoint names bytes that were
/// lost (rename alone is atomic, not durable). Throws Error(io) "FILE: cannot flush to storage: …".
void flush_to_storage(const std::vector<std::filesystem::path>& files);

/// Marks standard stream `fd` (0, 1 or 2) as closed when the process started, its place held by
/// /dev/null: an AtomicFile for a path that names it (/dev/stdout, /dev/fd/1, /proc/self/fd/1)
/// then fails with EBADF, as a write to the closed stream would, instead of reopening /dev/null.
void mark_standard_stream_closed(int fd);

/// Writes bytes to path atomically, creating parent directories. "-" writes to stdout.
void write_file_atomic(const std::filesystem::path& path, ByteSpan bytes);
/// write_file_atomic, except that a file already holding exactly these bytes is left as it is
/// (its mtime too): what a rerun with nothing to do should do to the outputs it derives.
void write_file_if_changed(const std::filesystem::path& path, ByteSpan bytes);

/// A new private directory `parent`/PREFIX-PID-K (parent: the system temp directory when empty)
/// for scratch files. It is removed with everything in it when destroyed, and by
/// remove_pending_temp_files when the process is interrupted; those that killed processes left
/// in `parent` (this user's, of a dead PID, untouched for ten minutes) when the next is made.
/// Throws Error(io).
class TempDirectory {
 public:
  TempDirectory(const std::filesystem::path& parent, const std::string& prefix);
  ~TempDirectory();
  TempDirectory(const TempDirectory&) = delete;
  TempDirectory& operator=(const TempDirectory&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// The output directory of a run, created with its missing parents when it did not exist. While
/// it lives, an interrupted process removes the directories it created if they hold no file
/// (remove_pending_temp_files); discard_if_empty does the same for a run that failed. So a run
/// stopped before it wrote anything leaves no trace, and a partial one keeps what resumes it.
class OutputDirectory {
 public:
  /// Throws Error(io) "DIR: cannot create: …".
  explicit OutputDirectory(const std::filesystem::path& dir);
  ~OutputDirectory();
  OutputDirectory(const OutputDirectory&) = delete;
  OutputDirectory& operator=(const OutputDirectory&) = delete;
  /// Removes what the constructor created, deepest first, where it holds no file.
  void discard_if_empty() noexcept;

 private:
  std::filesystem::path created_;  // the topmost directory created; empty when `dir` existed
};

/// An exclusive lock (flock(2)) on an output directory, held while the object lives, so that a
/// second dlprep run writing into the same directory (a Makefile's -j, a repeated CI job) stops
/// at once instead of interleaving its files with the first's. It leaves no file behind; a
/// crashed holder releases it. Throws Error(io) "DIR: another dlprep run is writing into it".
/// `Access::read` takes a shared lock instead, for a run that reads what another writes there
/// (a vocabulary): it fails, with the same error, while a writer holds the directory, and a
/// writer fails while it is held.
class DirectoryLock {
 public:
  enum class Access { write, read };
  explicit DirectoryLock(const std::filesystem::path& dir, Access access = Access::write);
  /// Whether a run holds `dir` for writing now (an incomplete dataset it is making, not one an
  /// interrupted run left).
  static bool held_by_writer(const std::filesystem::path& dir);
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  int fd_ = -1;
};

/// Removes the temp files that AtomicFiles of a killed process left in `dir` (not below it):
/// ".NAME.tmp.XXXXXX", of every NAME or of `name` alone. SIGKILL (the OOM killer, a batch
/// scheduler past its grace period) allows no cleanup, and such files can hold whole outputs.
/// Only for a directory whose DirectoryLock this process holds (then no live run owns them), or
/// with `name`, a target that no other run writes. `except`: a kept temp file (AtomicFile::keep)
/// that this run continues. Returns how many it removed.
uint64_t remove_dead_temp_files(const std::filesystem::path& dir, const std::string& name = "",
                                const std::filesystem::path& except = {});

/// Removes the temp files in `dir` that AtomicFiles of killed processes left for the targets
/// `wanted` accepts (given NAME as temp_file_stem cuts it), in a directory that no DirectoryLock
/// guards (l3 encode's outputs): an AtomicFile keeps its temp file flock()ed while it is open, so
/// one that no process holds locked, and untouched for a minute, is a dead run's. So an
/// AtomicFile closed (close(), same_as_target()) over a minute before its commit must not share
/// a directory with such a cleanup (l3 writes through write_file_atomic: closed, then renamed at
/// once). Returns how many it removed.
uint64_t remove_unlocked_temp_files(const std::filesystem::path& dir,
                                    const std::function<bool(const std::string&)>& wanted);

/// NAME as the temp file ".NAME.tmp.XXXXXX" of a file NAME holds it (cut to fit 255 bytes).
std::string temp_file_stem(const std::string& name);

/// Whether `file` (a name) is an AtomicFile's temporary file, ".NAME.tmp.XXXXXX".
bool is_temp_file_name(const std::string& file);
/// The temporary name ".NAME.tmp.SUFFIX" (SUFFIX: six letters or digits) of a file NAME, with
/// NAME cut where the whole would pass 255 bytes: what is_temp_file_name recognises.
std::string temp_file_name(const std::string& name, const std::string& suffix);

/// Unlinks every temp file of a live AtomicFile, removes every live TempDirectory and the empty
/// directories of every live OutputDirectory, and keeps new temp files from being created: call it
/// just before exiting on a signal, from the thread that waits for signals (it takes a lock, so not
/// from a signal handler).
void remove_pending_temp_files() noexcept;

/// What tells a file's contents apart for a rerun: its device, inode, size, modification time
/// and status change time (which also moves when an edit puts the modification time back). The same
/// stamp before and after a file was read and its output written means the output is of the file
/// now at that path; another (an editor's or rsync's rename over it mid-run) means the output is of
/// the old one, and newer than the new one, which make's rule would keep.
struct FileStamp {
  uint64_t device = 0, inode = 0, size = 0;
  int64_t mtime_ns = 0, ctime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};
/// nullopt when the path cannot be stat'ed (deleted), or is no regular file: a FIFO's time moves
/// as it is written, and it cannot be read again.
std::optional<FileStamp> file_stamp(const std::filesystem::path& path);
/// Converts `source` until it is the same file before and after a conversion: `convert(again)`
/// (again: a retry, whose output in place is the old source's) returns whether it wrote an output
/// that a changed source would make stale (false: skipped, failed, written to a stream), and
/// `discard()` removes that output before the next try, so that none of the old source is left
/// newer than the new one. Returns the stamp the last conversion read (nullopt when none was
/// checked). Throws Error(io) when the source changed at each of 3 tries.
std::optional<FileStamp> convert_unchanged(const std::filesystem::path& source,
                                           const std::function<bool(bool again)>& convert,
                                           const std::function<void()>& discard);

/// True when `output` exists and is newer than or as new as every input (make's rule).
bool is_up_to_date(const std::filesystem::path& output,
                   const std::vector<std::filesystem::path>& inputs);

}  // namespace dlprep
