#pragma once
#include "brisk/nn/module.h"
#include "brisk/nn/functional.h"
