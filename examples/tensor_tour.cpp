// A short tour of brisk tensors: factories, views, broadcasting, reductions.
#include <brisk/brisk.h>

#include <iostream>

int main() {
  using namespace brisk;
  Tensor x = arange(12, kFloat).view({3, 4});
  Tensor y = x.t();  // a view: same storage
  std::cout << "x =\n" << x << "\n";
  std::cout << "x.t() shares storage: " << (x.data_ptr() == y.data_ptr() ? "yes" : "no") << "\n";
  Tensor z = x + ones({4}) * 2;
  std::cout << "x + 2 =\n" << z << "\n";
  std::cout << "row sums: " << z.sum(1) << "\n";
  std::cout << "x @ x.t() =\n" << x.matmul(y) << "\n";
  return 0;
}
