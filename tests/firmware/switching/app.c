/* Two tasks of known depth on the RTOS of rtos.c; the deep one yields at its deepest frame,
 * so a context switch stacks its frame and r4-r11 below that frame. */
#include <stdint.h>

typedef struct tskTaskControlBlock TCB_t;
void *xTaskCreateStatic(void (*code)(void *), const char *name, uint32_t words, void *parameters,
                        uint32_t priority, uint32_t *stack, TCB_t *tcb);
uint32_t xTaskCreate(void (*code)(void *), const char *name, uint16_t words, void *parameters,
                     uint32_t priority, void **created);
uint32_t xTaskCreateAffinitySet(void (*code)(void *), const char *name, uint16_t words,
                                void *parameters, uint32_t priority, uint32_t affinity,
                                void **created);
void vTaskStartScheduler(void);
void vInitialiseLists(void);
void taskYIELD(void);

struct tskTaskControlBlock {
#if defined(MPU_PORT)
    uint32_t words[25]; /* rtos.c's, with an MPU port's region settings */
#else
    uint32_t words[17];
#endif
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

/* One entry for several tasks: each works as deep as its argument says. */
__attribute__((noinline)) static void work(uint32_t depth)
{
    volatile uint8_t frame[64];
    frame[depth % sizeof frame] = (uint8_t)depth;
    if (depth > 1u) {
        sink += frame[1];
    }
    taskYIELD();
}

void vWorkerTask(void *argument)
{
    for (;;) {
        work((uint32_t)(uintptr_t)argument);
    }
}

uint32_t uxTaskGetStackHighWaterMark(TCB_t *tcb);
void vStartOtherTask(void);

#if defined(NAMED_LIKE_THE_IDLE_TASK)
/* FreeRTOS 11 makes its idle task's name at run time ("IDLE" copied into a buffer on the
 * stack, the core's number after it); the depth is a constant. */
void vIdleLikeTask(void *argument)
{
    for (;;) {
        work((uint32_t)(uintptr_t)argument);
    }
}

__attribute__((noinline)) static void start_idle_like(const char *name)
{
    xTaskCreate(vIdleLikeTask, name, 72u, 0, 0u, 0);
}
#endif
static TCB_t deep_tcb;

/* Semihosting SYS_WRITE0: a line on QEMU's console. */
static void say(const char *text)
{
    register uint32_t operation __asm("r0") = 0x04u;
    register const char *argument __asm("r1") = text;
    __asm volatile("bkpt 0xab" : "+r"(operation) : "r"(argument) : "memory");
}

/* Semihosting SYS_EXIT, a normal end (ADP_Stopped_ApplicationExit). */
static void leave(void)
{
    register uint32_t operation __asm("r0") = 0x18u;
    register uint32_t reason __asm("r1") = 0x20026u;
    __asm volatile("bkpt 0xab" : "+r"(operation) : "r"(reason) : "memory");
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

/* The run ends after a fixed number of rounds, not when a time is up: what it measures is
 * the same on a fast machine and a loaded one. With ROUNDS 0 it never ends, as an RTOS. */
#ifndef ROUNDS
#define ROUNDS (4u * 4096u)
#endif

void vShallowTask(void *argument)
{
    (void)argument;
    for (uint32_t n = 0u;; n++) {
        shallow(n);
        if (n % 4096u == 0u) {
            report();
        }
        if (ROUNDS != 0u && n == ROUNDS) {
            leave();
        }
        taskYIELD();
    }
}

static uint32_t deep_stack[128];
static uint32_t shallow_stack[128];
static TCB_t shallow_tcb;

/* The tick, at the kernel's (lowest) priority as FreeRTOS sets it, with a frame of its own;
 * and a device interrupt, the MPS2's timer 0, at a more urgent priority: it can nest over
 * the tick, on the main stack. */
volatile uint32_t ticks;

__attribute__((noinline)) static void tick_work(uint32_t n)
{
    volatile uint8_t frame[48];
    frame[n % sizeof frame] = (uint8_t)n;
    ticks += frame[0];
}

void xPortSysTickHandler(void) { tick_work(ticks); }

__attribute__((noinline)) static void timer_work(uint32_t n)
{
    volatile uint8_t frame[80];
    frame[n % sizeof frame] = (uint8_t)n;
    sink += frame[1];
}

void TIMER0_Handler(void)
{
    *(volatile uint32_t *)0x4000000Cu = 1u; /* INTCLEAR */
    timer_work(sink);
}

static void start_interrupts(void)
{
    *(volatile uint32_t *)0xE000ED20u |= 0xFFu << 24;   /* SHPR3: SysTick lowest */
#if !defined(NO_DEVICE_TIMER) /* (the MPS2's timer 0; the MPS3 has its timers elsewhere) */
    *(volatile uint8_t *)(0xE000E400u + 8u) = 0x40u;    /* NVIC_IPR: timer 0 more urgent */
    *(volatile uint32_t *)0xE000E100u = 1u << 8;        /* NVIC_ISER0: timer 0 on */
    *(volatile uint32_t *)0x40000008u = 3331u;          /* timer 0: RELOAD */
    *(volatile uint32_t *)0x40000000u = 1u | (1u << 3); /* timer 0: enable, interrupt */
#endif
    *(volatile uint32_t *)0xE000E014u = 2499u;          /* SysTick: RVR */
    *(volatile uint32_t *)0xE000E010u = 7u;             /* SysTick: on, interrupt, core clock */
}

int main(void)
{
    vInitialiseLists();
    start_interrupts();
    xTaskCreateStatic(vDeepTask, "Deep", 128u, 0, 1u, deep_stack, &deep_tcb);
    xTaskCreateStatic(vShallowTask, "Shallow", 128u, 0, 1u, shallow_stack, &shallow_tcb);
    /* Two tasks of one entry, their stacks and control blocks from the heap. */
    xTaskCreate(vWorkerTask, "Worker 1", 96u, (void *)1, 1u, 0);
    xTaskCreate(vWorkerTask, "Worker 2", 96u, (void *)2, 1u, 0);
    vStartOtherTask();
#if defined(NAMED_LIKE_THE_IDLE_TASK)
    char idle_name[5];
    for (uint32_t i = 0u; i < 5u; i++) {
        idle_name[i] = "IDLE"[i];
    }
    start_idle_like(idle_name);
#endif
#if defined(NAMED_AT_RUN_TIME)
    /* A name made at run time: found only in the kernel's lists. */
    char name[5];
    for (uint32_t i = 0u; i < 4u; i++) {
        name[i] = "Late"[i] + (char)(sink & 0u);
    }
    name[4] = 0;
    xTaskCreate(vWorkerTask, name, 64u, (void *)3, 1u, 0);
    xTaskCreateAffinitySet(vWorkerTask, "Pinned", 64u, (void *)4, 1u, 1u, 0);
#endif
    vTaskStartScheduler();
    return 0;
}
