// Hangs on purpose: thread 0 waits for a flag that nothing ever sets. Launch: one block of 32 threads.
__global__ void hanging(volatile int* flag) {
    if (threadIdx.x == 0) {
        while (*flag == 0) {
        }
    }
}
