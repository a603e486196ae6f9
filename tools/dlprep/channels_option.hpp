// --channels keep|rgb, which the commands that convert images (convert-dataset, profile-mix) share.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "image/transform.hpp"

namespace dlprep::cli {

/// Adds --channels keep|rgb to `cmd`, with `description` as its help; the parsed value goes to
/// `channels`, which keeps its own value (keep) when the option is not given.
CLI::Option* add_channels_option(CLI::App& cmd, image::Channels& channels,
                                 const std::string& description);

}  // namespace dlprep::cli
