// brisk::nn: modules, layers, losses, initializers (PyTorch's torch.nn).
//
//   brisk::nn::Sequential net(brisk::nn::Linear(784, 128), brisk::nn::ReLU(), brisk::nn::Linear(128, 10));
//   brisk::Tensor loss = brisk::nn::F::cross_entropy(net(x), y);
//
// See docs/design/nn.md.
#pragma once
#include "brisk/nn/functional.h"
#include "brisk/nn/parallel.h"
#include "brisk/nn/init.h"
#include "brisk/nn/activation.h"
#include "brisk/nn/layers.h"
#include "brisk/nn/loss.h"
#include "brisk/nn/module.h"
#include "brisk/nn/conv.h"
#include "brisk/nn/pooling.h"
#include "brisk/nn/normalization.h"
#include "brisk/nn/attention.h"
#include "brisk/nn/transformer.h"
#include "brisk/nn/upsampling.h"
#include "brisk/nn/rnn.h"
#include "brisk/nn/padding.h"
#include "brisk/nn/dropout.h"
#include "brisk/nn/pixelshuffle.h"
#include "brisk/nn/embedding.h"
#include "brisk/nn/fold.h"
