/* Peer for cnet-perf allreduce: Open MPI's MPI_Allreduce (sum of floats) on the same host.
 *   mpirun -np 2 bench_mpi_allreduce BYTES ITERS   -> prints the average microseconds per call */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  long bytes = argc > 1 ? atol(argv[1]) : 64L << 20;
  int iters = argc > 2 ? atoi(argv[2]) : 10, rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int count = (int)(bytes / sizeof(float));
  float* in = malloc(bytes);
  float* out = malloc(bytes);
  for (int i = 0; i < count; ++i) in[i] = 1.0f;
  for (int i = 0; i < 3; ++i) MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double total = 0;
  for (int i = 0; i < iters; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    total += MPI_Wtime() - t0;
  }
  double slowest;
  MPI_Reduce(&total, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("%.1f\n", slowest / iters * 1e6);
  free(in);
  free(out);
  MPI_Finalize();
  return out == NULL;
}
