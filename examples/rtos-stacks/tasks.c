/* Firmware of our own, shaped like a FreeRTOS application: two tasks of known depth, two
 * interrupt handlers of different priorities, and a scheduler start that resets the main
 * stack pointer from the vector table as FreeRTOS's Cortex-M ports do. memplace did not
 * generate it: `memplace stacks` checks it from its ELF and GCC's reports alone. */
#include <stdint.h>

volatile uint32_t sink;

__attribute__((noinline)) static uint32_t leaf(uint32_t x)
{
    volatile uint8_t buf[96];
    buf[x & 63u] = (uint8_t)x;
    return buf[(x + 1u) & 63u];
}

__attribute__((noinline)) static uint32_t middle(uint32_t x)
{
    volatile uint8_t buf[40];
    buf[0] = (uint8_t)x;
    return leaf(x + buf[0]);
}

void vRxTask(void *argument)
{
    (void)argument;
    for (;;) {
        sink = middle(sink);
    }
}

void vTxTask(void *argument)
{
    (void)argument;
    for (;;) {
        sink = leaf(sink);
    }
}

/* A task whose depth the call graph alone cannot bound: it calls through a pointer, and it
 * recurses. Stack hints bound both. */
void (*volatile hook)(void);

__attribute__((noinline)) static uint32_t walk(uint32_t n)
{
    volatile uint8_t frame[16];
    frame[0] = (uint8_t)n;
    return n == 0u ? frame[0] : walk(n - 1u) + frame[0];
}

void vHookTask(void *argument)
{
    (void)argument;
    for (;;) {
        hook();
        sink = walk(sink & 3u);
    }
}

void SysTick_Handler(void) { sink += leaf(1u); }

void TIMER0_Handler(void) { sink += middle(2u); }

/* As the ports do: the main stack pointer back to the top of the stack, then the first
 * task; main's frames are gone from then on. */
__attribute__((naked, noinline)) void prvPortStartFirstTask(void)
{
    __asm volatile("ldr r0, =0xE000ED08\n"
                   "ldr r0, [r0]\n"
                   "ldr r0, [r0]\n"
                   "msr msp, r0\n"
                   "cpsie i\n"
                   "svc 0\n"
                   "b .\n");
}

__attribute__((noinline)) void vTaskStartScheduler(void) { prvPortStartFirstTask(); }

int main(void)
{
    volatile uint8_t setup[200];
    setup[0] = 1u;
    sink = setup[0];
    vTaskStartScheduler();
    return 0;
}
