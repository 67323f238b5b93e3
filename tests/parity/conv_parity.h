#pragma once
#include "parity.h"
