// Initial factors as the thesis authors' hamsi-mf draws them, for jobs/bench/hamsi: one
// std::mt19937 seeded with SEED, one std::normal_distribution<double>(0, 1), the users x R
// matrix row by row, then the items x R matrix row by row (the same generator and
// distribution objects throughout, so the distribution's cached second draw carries over).
// Written in the dpopt mf --out layout (X1.txt, X2t.txt) for dpopt mf --x0 DIR.
// usage: hamsi_x0 SEED USERS ITEMS R DIR
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

static int write(std::mt19937 &g, std::normal_distribution<double> &n, const std::string &path,
                 long rows, int r, const char *what) {
  FILE *f = std::fopen(path.c_str(), "w");
  if (!f) return 1;
  std::fprintf(f, "# %s: %ld x %d (row-major); hamsi-mf's initial point\n%ld\n", what, rows, r,
               rows * r);
  for (long k = 0; k < rows * r; k++) std::fprintf(f, "%.17g\n", n(g));
  return std::fclose(f) != 0;
}

int main(int argc, char **argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: hamsi_x0 SEED USERS ITEMS R DIR\n");
    return 2;
  }
  std::mt19937 g;
  g.seed(std::strtol(argv[1], nullptr, 10));
  std::normal_distribution<double> n(0, 1);
  long K = std::atol(argv[2]), N = std::atol(argv[3]);
  int r = std::atoi(argv[4]);
  std::string dir = argv[5];
  if (write(g, n, dir + "/X1.txt", K, r, "X1") || write(g, n, dir + "/X2t.txt", N, r, "X2t")) {
    std::fprintf(stderr, "hamsi_x0: cannot write into %s\n", argv[5]);
    return 1;
  }
  return 0;
}
