#include "channels_option.hpp"

namespace dlprep::cli {

CLI::Option* add_channels_option(CLI::App& cmd, image::Channels& channels,
                                 const std::string& description) {
  return cmd
      .add_option_function<std::string>(
          "--channels",
          [&channels](const std::string& value) {
            channels = value == "rgb" ? image::Channels::rgb : image::Channels::keep;
          },
          description)
      ->check(CLI::IsMember({"keep", "rgb"}).description(""))
      ->default_str("keep")
      ->type_name("keep|rgb");
}

}  // namespace dlprep::cli
