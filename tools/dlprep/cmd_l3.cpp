// dlprep l3 encode|decode|verify|bench: the L3 lossless image format (man/dlprep-l3.1).
#include "cmd_l3.hpp"

#include <utility>
#include <vector>

#include "core/error.hpp"

namespace dlprep::cli {

Action add_l3_command(CLI::App& app) {
  CLI::App* l3 = app.add_subcommand("l3", "encode, decode, verify and benchmark L3 images");
  l3->require_subcommand(1);
  l3->footer(
      "L3 is a lossless image format that decodes in parallel (per patch, per row); its\n"
      "specification is dlprep-l3(5). Run 'dlprep l3 SUBCOMMAND --help' for each subcommand.\n"
      "\n"
      "Examples:\n"
      "  dlprep l3 encode images/ -o images-l3/\n"
      "  dlprep l3 verify images-l3/cat.l3 --against images/cat.png\n");
  std::vector<std::pair<CLI::App*, Action>> subs;
  const Command kSubcommands[] = {
      {"encode", add_l3_encode_command},
      {"decode", add_l3_decode_command},
      {"verify", add_l3_verify_command},
      {"bench", add_l3_bench_command},
  };
  for (const Command& sub : kSubcommands) {
    Action action = sub.add(*l3);
    subs.emplace_back(l3->get_subcommand(sub.name), std::move(action));
  }
  return [subs](const Globals& globals) {
    for (const auto& [sub, action] : subs)
      if (sub->parsed()) return action(globals);
    throw Error(Errc::internal, "no l3 subcommand was selected");
  };
}

}  // namespace dlprep::cli
