// The recording hooks moved to core/profile_hooks.h (they sit below the ops,
// so core and the backends can call them); this name stays for the callers
// above core.
#pragma once
#include "core/profile_hooks.h"
