// The `l3` command's subcommands, one file each (cmd_l3.cpp only dispatches).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "command.hpp"
#include "core/file_io.hpp"
#include "inputs.hpp"

namespace dlprep::cli {

Action add_l3_encode_command(CLI::App& l3);  // cmd_l3_convert.cpp
Action add_l3_decode_command(CLI::App& l3);  // cmd_l3_convert.cpp
Action add_l3_verify_command(CLI::App& l3);  // cmd_l3_verify.cpp
Action add_l3_bench_command(CLI::App& l3);   // cmd_l3_bench.cpp

/// `l3 bench --device/--batch`: the batch-decoder benchmark (cmd_l3_bench_device.cpp).
struct BenchDeviceOptions {
  std::vector<std::string> inputs;
  std::vector<std::string> jpegs;  ///< --jpeg: the same pictures as JPEG, for nvJPEG
  std::string device;              ///< cpu, cuda or auto (empty: auto)
  std::string batches;             ///< --batch list (empty: 1,16,64,256)
  std::string layouts;             ///< --layout list (empty: nhwc-u8,nchw-f16)
  unsigned repeats = 5;
  unsigned depth = 2;
  double max_seconds = 0;
};
int run_l3_device_bench(const BenchDeviceOptions& options, const Globals& globals);

/// The benchmarks' image files named by `args` (files as given, directories walked for image
/// files; a directory without any is warned about), each read in parallel with progress and handed
/// to `load(i, bytes)`, which keeps what it needs. A file that fails (unreadable, corrupt, out of
/// memory) is reported with its path and reason and left out; `code` becomes the worst exit code
/// of the files (cmd_l3_bench.cpp).
InputList load_bench_inputs(const std::vector<std::string>& args, const Globals& globals, int& code,
                            const std::function<void(size_t count)>& prepare,
                            const std::function<void(size_t i, ByteSpan bytes)>& load);

/// Throws unless `head`, a file's first bytes, starts an L3 file: Error(corrupt_data) "empty file",
/// Error(unsupported) "not an l3 file (format png)". Also a HeadCheck (core/file_io.hpp), so that a
/// stream of something else is refused at its first bytes (cmd_l3_verify.cpp).
std::optional<uint64_t> require_l3_head(ByteSpan head);

/// How -j is spread over `files` files: the files worked on at once (at most -j, and fewer, with a
/// warning, where `ulimit -n` does not leave two open files for each), and the threads left over
/// for each file's patches (cmd_l3_convert.cpp).
struct ThreadSplit {
  unsigned files = 1;
  unsigned patches = 1;
};
ThreadSplit split_threads(const Globals& globals, const std::string& command, size_t files);

/// A comma-separated list of counts from 1 to `max` for `flag`; throws Error(invalid_argument)
/// "FLAG: 'x' is not a NOUN from 1 to MAX" or "FLAG: empty list" (cmd_l3_bench.cpp).
std::vector<size_t> parse_count_list(const std::string& text, const std::string& flag,
                                     const std::string& noun, size_t max);

}  // namespace dlprep::cli
