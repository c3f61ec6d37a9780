// Faults on purpose: every thread stores far outside any allocation (an illegal address), which leaves
// the process's CUDA context unusable. Launch: one block of 32 threads.
__global__ void faulting(float* c) { c[(1ull << 36) + threadIdx.x] = 1.0f; }
