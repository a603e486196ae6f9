#include "core/timing.hpp"
