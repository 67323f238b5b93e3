// brisk_distributions_bench without libtorch.
#include "distributions_bench.h"
TorchDistributionsTimes torch_distributions_times(int, int) { return {}; }
