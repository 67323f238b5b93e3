// brisk::cuda runtime: devices, streams, events, copies between host and
// device, pinned memory. The first group runs everywhere and checks what a
// machine without a usable GPU answers; the rest needs a device and skips
// with "no CUDA device" otherwise.
#include <gtest/gtest.h>

#include <numeric>

#include "brisk/brisk.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::expect_error;

// ---- without a device ---------------------------------------------------------------

TEST(CudaRuntimeNoDevice, AvailabilityIsConsistent) {
  if (cuda::is_available()) {
    EXPECT_GT(cuda::device_count(), 0);
    EXPECT_TRUE(cuda::unavailable_reason().empty());
    return;
  }
  EXPECT_EQ(cuda::device_count(), 0);
  EXPECT_FALSE(cuda::unavailable_reason().empty());
}

TEST(CudaRuntimeNoDevice, TensorsOnCudaThrowWithTheReason) {
  if (cuda::is_available()) GTEST_SKIP() << "a CUDA device is present: the no-device errors cannot be checked";
  const std::string reason = cuda::unavailable_reason();
  expect_error([] { zeros({2, 3}, Device(kCUDA)); }, {"device cuda", "not available"});
  expect_error([] { empty({4}, TensorOptions(kHalf).device(Device("cuda:1"))); }, {"[empty]", "not available"});
  Tensor x = ones({3});
  expect_error([&] { x.to(Device(kCUDA)); }, {"not available", reason.c_str()});
  expect_error([&] { x.cuda(); }, {"not available"});
  expect_error([&] { x.pin_memory(); }, {"[pin_memory]", "not available"});
  EXPECT_FALSE(x.is_pinned());
}

TEST(CudaRuntimeNoDevice, RuntimeCallsThrowBrisksError) {
  if (cuda::is_available()) GTEST_SKIP() << "a CUDA device is present: the no-device errors cannot be checked";
  expect_error([] { cuda::current_device(); }, {"not available"});
  expect_error([] { cuda::set_device(0); }, {"not available"});
  expect_error([] { cuda::synchronize(); }, {"not available"});
  expect_error([] { cuda::Stream s; }, {"not available"});
  expect_error([] { cuda::stream_from_pool(); }, {"not available"});
  expect_error([] { cuda::DeviceGuard g(0); }, {"not available"});
  cuda::Event e(true);  // creating an event object is free; using one needs a device
  EXPECT_FALSE(e.recorded());
  EXPECT_TRUE(e.query());
  expect_error([&] { e.record(); }, {"not available"});
}

TEST(CudaRuntimeNoDevice, DataLoaderPinMemoryIsIgnoredWithoutADevice) {
  if (cuda::is_available()) GTEST_SKIP() << "a CUDA device is present";
  Tensor x = arange(12, kFloat).reshape({6, 2});
  data::DataLoader loader(data::TensorDataset(x, arange(6)), data::DataLoaderOptions().batch_size(4).pin_memory(true));
  int n = 0;
  for (auto& b : loader) {
    EXPECT_FALSE(b.data.is_pinned());
    EXPECT_TRUE(b.data.is_cpu());
    ++n;
  }
  EXPECT_EQ(n, 2);
}

TEST(CudaRuntimeNoDevice, MathModesAreSettable) {
  const bool tf32 = cuda::allow_tf32(), bench = cuda::cudnn_benchmark();
  EXPECT_FALSE(tf32);  // off by default, as PyTorch's allow_tf32 for matmul
  cuda::set_allow_tf32(true);
  EXPECT_TRUE(cuda::allow_tf32());
  cuda::set_allow_tf32(tf32);
  cuda::set_cudnn_benchmark(!bench);
  EXPECT_EQ(cuda::cudnn_benchmark(), !bench);
  cuda::set_cudnn_benchmark(bench);
}

// ---- with a device ------------------------------------------------------------------

TEST(CudaRuntime, DeviceIndexIsResolvedAndChecked) {
  REQUIRE_CUDA();
  Tensor t = zeros({2}, Device(kCUDA));
  EXPECT_TRUE(t.is_cuda());
  EXPECT_EQ(t.device().index, cuda::current_device());
  const int n = cuda::device_count();
  expect_error([&] { zeros({2}, Device(kCUDA, n)); }, {"out of range"});
  auto p = cuda::get_device_properties();
  EXPECT_FALSE(p.name.empty());
  EXPECT_GT(p.multi_processor_count, 0);
  EXPECT_GT(p.total_memory, 0);
}

TEST(CudaRuntime, HostDeviceRoundTripKeepsValuesForEveryDtype) {
  REQUIRE_CUDA();
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16, kInt64, kInt32, kUInt8, kBool}) {
    Tensor x = arange(24, kFloat).reshape({2, 3, 4}).to(dt);
    Tensor g = x.to(Device(kCUDA));
    EXPECT_EQ(g.dtype(), dt);
    EXPECT_TRUE(g.is_cuda());
    Tensor back = g.cpu();
    EXPECT_TRUE(back.is_cpu());
    EXPECT_TRUE(equal(back, x)) << dt;
  }
}

TEST(CudaRuntime, CopiesBetweenLayoutsAndDtypes) {
  REQUIRE_CUDA();
  Tensor x = randn({5, 7});
  // Non-contiguous source on the host, non-contiguous destination on the device.
  Tensor dst = zeros({7, 5}, Device(kCUDA)).t();
  dst.copy_(x.t().t());
  EXPECT_TRUE(allclose(dst.cpu(), x));
  // Cast during the copy, both directions.
  Tensor d64 = empty({5, 7}, TensorOptions(kDouble).device(Device(kCUDA)));
  d64.copy_(x);
  EXPECT_TRUE(allclose(d64.cpu(), x.to(kDouble)));
  Tensor h16 = empty({5, 7}, kHalf);
  h16.copy_(d64);
  EXPECT_TRUE(allclose(h16.to(kFloat), x, 1e-3, 1e-3));
  // Broadcasting source.
  Tensor row = arange(7, kFloat);
  Tensor b = empty({5, 7}, Device(kCUDA));
  b.copy_(row);
  EXPECT_TRUE(equal(b.cpu(), row.expand({5, 7}).contiguous()));
  // item() and printing go through the host.
  EXPECT_EQ(full({}, 3.5, Device(kCUDA)).item<double>(), 3.5);
  EXPECT_NE(to_string(b).find("device='cuda:0'"), std::string::npos);
}

TEST(CudaRuntime, PinnedMemoryAndNonBlockingCopies) {
  REQUIRE_CUDA();
  Tensor x = arange(1 << 20, kFloat);
  Tensor p = x.pin_memory();
  EXPECT_TRUE(p.is_pinned());
  EXPECT_FALSE(x.is_pinned());
  EXPECT_TRUE(equal(p, x));
  EXPECT_TRUE(p.pin_memory().is_same(p));
  // A view into pinned memory is pinned too.
  EXPECT_TRUE(p.narrow(0, 100, 10).is_pinned());
  Tensor g = p.to(Device(kCUDA), /*non_blocking=*/true);
  Tensor back = empty({1 << 20}).pin_memory();
  back.copy_(g, /*non_blocking=*/true);
  cuda::current_stream().synchronize();
  EXPECT_TRUE(equal(back, x));
  EXPECT_GT(cuda::host_memory_stats().reserved, 0);
}

TEST(CudaRuntime, StreamsAndEvents) {
  REQUIRE_CUDA();
  cuda::Stream def = cuda::current_stream();
  EXPECT_EQ(def, cuda::default_stream());
  cuda::Stream s = cuda::Stream::create();
  EXPECT_NE(s, def);
  cuda::Stream pooled = cuda::stream_from_pool();
  EXPECT_NE(pooled.handle(), nullptr);
  Tensor y;
  {
    cuda::StreamGuard guard(s);
    EXPECT_EQ(cuda::current_stream(), s);
    Tensor x = ones({1 << 20}, Device(kCUDA));
    y = x * 2 + 1;
  }
  EXPECT_EQ(cuda::current_stream(), def);
  def.wait(s);
  EXPECT_TRUE(allclose(y.cpu(), full({1 << 20}, 3.0)));
  s.synchronize();
  EXPECT_TRUE(s.query());

  cuda::Event start(true), end(true);
  start.record();
  Tensor a = randn({1024, 1024}, Device(kCUDA));
  Tensor c = a.matmul(a);
  end.record();
  end.synchronize();
  EXPECT_TRUE(end.query());
  EXPECT_GE(start.elapsed_time(end), 0.0f);
  cuda::Event untimed;
  untimed.record();
  expect_error([&] { start.elapsed_time(untimed); }, {"enable_timing"});
  cuda::synchronize();
}

TEST(CudaRuntime, SyncDebugModeSeesDeviceToHostCopies) {
  REQUIRE_CUDA();
  Tensor g = ones({4}, Device(kCUDA));
  set_sync_debug_mode(SyncDebugMode::Error);
  expect_error([&] { g.cpu(); }, {"to"});
  expect_error([&] { (void)g.sum().item<float>(); }, {"item"});
  set_sync_debug_mode(SyncDebugMode::Off);
  EXPECT_EQ(g.sum().item<float>(), 4.0f);
}

TEST(CudaRuntime, IndexOpsRequireTheirIndicesOnTheSameDevice) {
  REQUIRE_CUDA();
  Tensor x = arange(12, kFloat).reshape({3, 4});
  Tensor g = x.cuda();
  Tensor idx = zeros({3, 1}, kInt64);
  expect_error([&] { g.gather(1, idx); }, {"[gather]", "index", "cuda:0", "cpu"});
  expect_error([&] { x.gather(1, idx.cuda()); }, {"[gather]", "index", "cuda:0"});
  expect_error([&] { g.index_select(0, arange(2)); }, {"[index_select]", "index"});
  expect_error([&] { Tensor(g).scatter_add_(1, idx, x.narrow(1, 0, 1)); }, {"[scatter_add_]", "index"});
  expect_error([&] { Tensor(g).index_add_(0, arange(3).cuda(), x); }, {"[index_add_]", "source"});
  // On the same device they run and agree with the CPU.
  EXPECT_TRUE(equal(g.gather(1, idx.cuda()).cpu(), x.gather(1, idx)));
}

TEST(CudaRuntime, CrossEntropyTargetOutOfRangeIsRaisedAtTheNextSync) {
  REQUIRE_CUDA();
  Tensor logits = randn({4, 3}, Device(kCUDA));
  Tensor bad = tensor({0, 1, 5, 2}, kInt64).cuda();
  Tensor loss = nn::functional::cross_entropy(logits, bad);  // no host round trip here
  expect_error([&] { (void)loss.item<float>(); }, {"out of bounds", "5"});
  // The context stays usable and a correct call works.
  Tensor good = tensor({0, 1, 2, 2}, kInt64);
  Tensor ref = nn::functional::cross_entropy(logits.cpu(), good);
  Tensor got = nn::functional::cross_entropy(logits, good.cuda());
  EXPECT_NEAR(got.item<float>(), ref.item<float>(), 1e-5);
}
