/* Two tasks of known depth on the RTOS of rtos.c; the deep one yields at its deepest frame,
 * so a context switch stacks its frame and r4-r11 below that frame. */
#include <stdint.h>

typedef struct tskTaskControlBlock TCB_t;
void xTaskCreateStatic(void (*code)(void *), const char *name, uint32_t words, uint32_t *stack,
                       TCB_t *tcb);
void vTaskStartScheduler(void);
void vInitialiseLists(void);
void taskYIELD(void);

struct tskTaskControlBlock {
    uint32_t words[17];
};

volatile uint32_t sink;

#if defined(__ARM_FP)
volatile float level;
#endif

__attribute__((noinline)) static void deep(uint32_t x)
{
    volatile uint8_t frame[200];
    for (uint32_t i = 0u; i < sizeof frame; i++) {
        frame[i] = (uint8_t)(x + i);
    }
#if defined(__ARM_FP)
    level = level * 0.5f + (float)x; /* a live floating-point context when it yields */
#endif
    taskYIELD(); /* switched out at the deepest frame */
    sink += frame[x % sizeof frame];
}

__attribute__((noinline)) static void shallow(uint32_t x)
{
    volatile uint8_t frame[24];
    frame[0] = (uint8_t)x;
    sink += frame[0];
}

void vDeepTask(void *argument)
{
    (void)argument;
    for (uint32_t n = 0u;; n++) {
        deep(n);
        taskYIELD();
    }
}

uint32_t uxTaskGetStackHighWaterMark(TCB_t *tcb);
static TCB_t deep_tcb;

/* Semihosting SYS_WRITE0: a line on QEMU's console. */
static void say(const char *text)
{
    register uint32_t operation __asm("r0") = 0x04u;
    register const char *argument __asm("r1") = text;
    __asm volatile("bkpt 0xab" : "+r"(operation) : "r"(argument) : "memory");
}

static void report(void)
{
    char line[] = "Deep high water mark: 0000 words\n";
    uint32_t words = uxTaskGetStackHighWaterMark(&deep_tcb);
    for (uint32_t digit = 0u; digit < 4u; digit++) {
        line[25u - digit] = (char)('0' + words % 10u);
        words /= 10u;
    }
    say(line);
}

void vShallowTask(void *argument)
{
    (void)argument;
    for (uint32_t n = 0u;; n++) {
        shallow(n);
        if (n % 4096u == 0u) {
            report();
        }
        taskYIELD();
    }
}

static uint32_t deep_stack[128];
static uint32_t shallow_stack[128];
static TCB_t shallow_tcb;

int main(void)
{
    vInitialiseLists();
    xTaskCreateStatic(vDeepTask, "Deep", 128u, deep_stack, &deep_tcb);
    xTaskCreateStatic(vShallowTask, "Shallow", 128u, shallow_stack, &shallow_tcb);
    vTaskStartScheduler();
    return 0;
}
