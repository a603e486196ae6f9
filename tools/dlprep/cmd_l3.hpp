// The `l3` command's subcommands, one file each (cmd_l3.cpp only dispatches).
#pragma once

#include "command.hpp"

namespace dlprep::cli {

Action add_l3_encode_command(CLI::App& l3);  // cmd_l3_convert.cpp
Action add_l3_decode_command(CLI::App& l3);  // cmd_l3_convert.cpp
Action add_l3_verify_command(CLI::App& l3);  // cmd_l3_verify.cpp
Action add_l3_bench_command(CLI::App& l3);   // cmd_l3_bench.cpp

}  // namespace dlprep::cli
