/* A small RTOS of our own that switches tasks the way FreeRTOS's Cortex-M3 port does, with
 * FreeRTOS's names and layout for what a debugger reads: task control blocks (TCB_t) with
 * pxTopOfStack, the two list items, uxPriority, pxStack and pcTaskName, in the ready lists
 * pxReadyTasksLists and the delayed and suspended lists, and pxCurrentTCB. PendSV saves
 * r4-r11 on the task's stack under the exception frame; the scheduler start resets the main
 * stack pointer from the vector table; each new stack is filled with 0xA5 and a task starts
 * one word below its top, aligned down to 8. memplace did not generate it: `memplace stacks
 * --run` finds its task stacks through these lists while it runs. A tick (SysTick) and a
 * device interrupt (the MPS2 timer 0, more urgent, nesting over the tick) run on the main
 * stack. */
#include <stdint.h>

#define configMAX_PRIORITIES 2
#define configMAX_TASK_NAME_LEN 16
#define tskSTACK_FILL_BYTE 0xA5u

typedef struct xLIST_ITEM {
    uint32_t xItemValue;
    struct xLIST_ITEM *pxNext;
    struct xLIST_ITEM *pxPrevious;
    void *pvOwner;
    void *pvContainer;
} ListItem_t;

typedef struct xMINI_LIST_ITEM {
    uint32_t xItemValue;
    struct xLIST_ITEM *pxNext;
    struct xLIST_ITEM *pxPrevious;
} MiniListItem_t;

typedef struct xLIST {
    volatile uint32_t uxNumberOfItems;
    ListItem_t *pxIndex;
    MiniListItem_t xListEnd;
} List_t;

typedef struct tskTaskControlBlock {
    volatile uint32_t *pxTopOfStack;
#if defined(MPU_PORT)
    uint32_t xMPUSettings[8]; /* an MPU port's region settings, after the stack pointer */
#endif
    ListItem_t xStateListItem;
    ListItem_t xEventListItem;
    uint32_t uxPriority;
    uint32_t *pxStack;
    char pcTaskName[configMAX_TASK_NAME_LEN];
} TCB_t;

List_t pxReadyTasksLists[configMAX_PRIORITIES];
List_t xDelayedTaskList1;
List_t xDelayedTaskList2;
List_t xSuspendedTaskList;
TCB_t *volatile pxCurrentTCB;

static void vListInitialise(List_t *list)
{
    list->uxNumberOfItems = 0u;
    list->pxIndex = (ListItem_t *)&list->xListEnd;
    list->xListEnd.xItemValue = 0xFFFFFFFFu;
    list->xListEnd.pxNext = (ListItem_t *)&list->xListEnd;
    list->xListEnd.pxPrevious = (ListItem_t *)&list->xListEnd;
}

static void vListInsertEnd(List_t *list, ListItem_t *item)
{
    ListItem_t *end = (ListItem_t *)&list->xListEnd;
    item->pxNext = end;
    item->pxPrevious = end->pxPrevious;
    end->pxPrevious->pxNext = item;
    end->pxPrevious = item;
    item->pvContainer = list;
    list->uxNumberOfItems++;
}

static void prvTaskExitError(void)
{
    for (;;) {
    }
}

/* As FreeRTOS's prvInitialiseNewTask: the name, the stack's low end, and a first frame one
 * word below the top, aligned down to 8. Like FreeRTOS without stack overflow checking or
 * tracing, it does not fill the stack: the marks come from memplace's paint. */
static void prvInitialiseNewTask(void (*code)(void *), const char *name, uint32_t words,
                                 void *parameters, uint32_t *stack, TCB_t *tcb)
{
    for (uint32_t i = 0u; i < configMAX_TASK_NAME_LEN - 1u && name[i]; i++) {
        tcb->pcTaskName[i] = name[i];
    }
    tcb->pxStack = stack;
    tcb->uxPriority = 1u;
    uint32_t *top = (uint32_t *)(((uintptr_t)&stack[words - 1u]) & ~(uintptr_t)7u);
    *--top = 0x01000000u;               /* xPSR: Thumb */
    *--top = (uint32_t)(uintptr_t)code; /* PC */
    *--top = (uint32_t)(uintptr_t)prvTaskExitError; /* LR */
    top -= 5;                           /* r12, r3, r2, r1 */
    *top = (uint32_t)(uintptr_t)parameters; /* r0: the task's argument */
#if defined(__ARM_ARCH_8M_MAIN__) || defined(__ARM_ARCH_8_1M_MAIN__) ||                    \
    defined(__ARM_ARCH_8M_BASE__)
    top -= 8;                           /* r4-r11 */
#if defined(TRUSTZONE_NS)
    *--top = 0xFFFFFFBCu;               /* EXC_RETURN: non-secure thread mode, PSP, no FP */
    *--top = (uint32_t)(uintptr_t)stack; /* PSPLIM: the stack's low end */
    *--top = 0u;                        /* xSecureContext: none (no secure calls) */
#else
    *--top = 0xFFFFFFFDu;               /* EXC_RETURN: thread mode, PSP, no FP context */
    *--top = (uint32_t)(uintptr_t)stack; /* PSPLIM: the stack's low end */
#endif
#else
#if defined(__ARM_FP)
    *--top = 0xFFFFFFFDu;               /* EXC_RETURN: thread mode, PSP, no FP context */
#endif
    top -= 8;                           /* r4-r11 */
#if defined(MPU_PORT)
    *--top = 0x2u;                      /* CONTROL: privileged, on the process stack */
#endif
#endif
    tcb->pxTopOfStack = top;
    tcb->xStateListItem.pvOwner = tcb;
    vListInsertEnd(&pxReadyTasksLists[1], &tcb->xStateListItem);
    if (pxCurrentTCB == 0) {
        pxCurrentTCB = tcb;
    }
}

/* FreeRTOS's signature: the stack and the control block are the application's. */
void *xTaskCreateStatic(void (*code)(void *), const char *name, uint32_t words, void *parameters,
                        uint32_t priority, uint32_t *stack, TCB_t *tcb)
{
    (void)priority;
    prvInitialiseNewTask(code, name, words, parameters, stack, tcb);
    return tcb;
}

/* The heap as heap_1 keeps it: ucHeap, handed out in order and never freed. */
#ifndef HEAP
#define HEAP ucHeap
#endif
#if defined(HEAP_SECTION)
/* The C library's heap as linker scripts keep it, in a section `.heap` (heap_3's). */
__attribute__((section(".heap"))) static uint8_t HEAP[4096] __attribute__((aligned(8)));
#else
static uint8_t HEAP[4096] __attribute__((aligned(8)));
#endif
static uint32_t xNextFreeByte;

/* As FreeRTOS's heap_n.c, in a unit of its own: a call of its own, never inlined. */
__attribute__((noinline)) void *pvPortMalloc(uint32_t size)
{
    void *block = &HEAP[xNextFreeByte];
    xNextFreeByte += (size + 7u) & ~7u;
    return block;
}

/* FreeRTOS's signature: stack and control block from the heap. */
uint32_t xTaskCreate(void (*code)(void *), const char *name, uint16_t words, void *parameters,
                     uint32_t priority, void **created)
{
    (void)priority;
    uint32_t *stack = pvPortMalloc(words * 4u);
    TCB_t *tcb = pvPortMalloc(sizeof(TCB_t));
    for (uint32_t i = 0u; i < sizeof(TCB_t); i++) {
        ((uint8_t *)tcb)[i] = 0u;
    }
    prvInitialiseNewTask(code, name, words, parameters, stack, tcb);
    if (created) {
        *created = tcb;
    }
    return 1u;
}

#if defined(NAMED_AT_RUN_TIME)
/* FreeRTOS's SMP creation with a core affinity, which memplace does not follow: a task it
 * makes is found in the kernel's lists only. */
uint32_t xTaskCreateAffinitySet(void (*code)(void *), const char *name, uint16_t words,
                                void *parameters, uint32_t priority, uint32_t affinity,
                                void **created)
{
    (void)priority;
    (void)affinity;
    uint32_t *stack = pvPortMalloc(words * 4u);
    TCB_t *tcb = pvPortMalloc(sizeof(TCB_t));
    for (uint32_t i = 0u; i < sizeof(TCB_t); i++) {
        ((uint8_t *)tcb)[i] = 0u;
    }
    prvInitialiseNewTask(code, name, words, parameters, stack, tcb);
    if (created) {
        *created = tcb;
    }
    return 1u;
}
#endif

/* Round robin over the ready list of priority 1. */
void vTaskSwitchContext(void)
{
    ListItem_t *next = pxCurrentTCB->xStateListItem.pxNext;
    if (next == (ListItem_t *)&pxReadyTasksLists[1].xListEnd) {
        next = next->pxNext;
    }
    pxCurrentTCB = next->pvOwner;
}

void taskYIELD(void)
{
    *(volatile uint32_t *)0xE000ED04u = 1u << 28; /* ICSR.PENDSVSET */
    __asm volatile("dsb\nisb" ::: "memory");
}

#if defined(TRUSTZONE_NS) && defined(__ARM_ARCH_8M_BASE__)
/* As ARM_CM23 on the non-secure side of TrustZone (Armv8-M baseline: r8-r11 through the low
 * registers): xSecureContext, PSPLIM, EXC_RETURN, r4-r7, r8-r11 from the stack pointer up. */
uint32_t xSecureContext;

__attribute__((naked)) void xPortPendSVHandler(void)
{
    __asm volatile("mrs r2, psp\n"
                   "ldr r3, =xSecureContext\n"
                   "ldr r0, [r3]\n"
                   "ldr r3, =pxCurrentTCB\n"
                   "ldr r1, [r3]\n"
                   "sub r2, #44\n"
                   "str r2, [r1]\n"
                   "mrs r1, psplim\n"
                   "mov r3, lr\n"
                   "stmia r2!, {r0, r1, r3-r7}\n"
                   "mov r4, r8\n"
                   "mov r5, r9\n"
                   "mov r6, r10\n"
                   "mov r7, r11\n"
                   "stmia r2!, {r4-r7}\n"
                   "bl vTaskSwitchContext\n"
                   "ldr r3, =pxCurrentTCB\n"
                   "ldr r1, [r3]\n"
                   "ldr r2, [r1]\n"
                   "add r2, #28\n"
                   "ldmia r2!, {r4-r7}\n"
                   "mov r8, r4\n"
                   "mov r9, r5\n"
                   "mov r10, r6\n"
                   "mov r11, r7\n"
                   "sub r2, #44\n"
                   "ldmia r2!, {r0, r1, r3}\n"
                   "ldr r4, =xSecureContext\n"
                   "str r0, [r4]\n"
                   "msr psplim, r1\n"
                   "mov lr, r3\n"
                   "ldmia r2!, {r4-r7}\n"
                   "add r2, #16\n"
                   "msr psp, r2\n"
                   "bx lr\n");
}

__attribute__((naked)) void vPortSVCHandler(void)
{
    __asm volatile("ldr r3, =pxCurrentTCB\n"
                   "ldr r1, [r3]\n"
                   "ldr r2, [r1]\n"
                   "ldmia r2!, {r0, r1, r3}\n"
                   "ldr r4, =xSecureContext\n"
                   "str r0, [r4]\n"
                   "msr psplim, r1\n"
                   "mov lr, r3\n"
                   "add r2, #32\n"
                   "msr psp, r2\n"
                   "bx lr\n");
}
#elif defined(TRUSTZONE_NS)
/* As ARM_CM33 (and ARM_CM23, ARM_CM55, ARM_CM85) on the non-secure side of TrustZone: the
 * task's secure context handle (xSecureContext), PSPLIM and EXC_RETURN under r4-r11, and
 * s16-s31 over them when its FP context is live. A task with a secure context would have
 * the secure side save it (SecureContext_SaveContext); these tasks have none. */
uint32_t xSecureContext;

__attribute__((naked)) void xPortPendSVHandler(void)
{
    __asm volatile("mrs r0, psp\n"
                   "isb\n"
                   "ldr r1, =xSecureContext\n"
                   "ldr r1, [r1]\n"
#if defined(__ARM_FP)
                   "tst lr, #0x10\n"
                   "it eq\n"
                   "vstmdbeq r0!, {s16-s31}\n"
#endif
                   "mrs r2, psplim\n"
                   "mov r3, lr\n"
                   "stmdb r0!, {r1-r11}\n"
                   "ldr r3, =pxCurrentTCB\n"
                   "ldr r1, [r3]\n"
                   "str r0, [r1]\n"
                   "bl vTaskSwitchContext\n"
                   "ldr r3, =pxCurrentTCB\n"
                   "ldr r1, [r3]\n"
                   "ldr r0, [r1]\n"
                   "ldmia r0!, {r1-r11}\n"
                   "ldr r12, =xSecureContext\n"
                   "str r1, [r12]\n"
                   "msr psplim, r2\n"
                   "mov lr, r3\n"
#if defined(__ARM_FP)
                   "tst lr, #0x10\n"
                   "it eq\n"
                   "vldmiaeq r0!, {s16-s31}\n"
#endif
                   "msr psp, r0\n"
                   "bx lr\n");
}

__attribute__((naked)) void vPortSVCHandler(void)
{
    __asm volatile("ldr r3, =pxCurrentTCB\n"
                   "ldr r1, [r3]\n"
                   "ldr r0, [r1]\n"
                   "ldmia r0!, {r1-r11}\n"
                   "ldr r12, =xSecureContext\n"
                   "str r1, [r12]\n"
                   "msr psplim, r2\n"
                   "msr psp, r0\n"
                   "mov lr, r3\n"
                   "bx lr\n");
}
#elif defined(__ARM_ARCH_8M_MAIN__) || defined(__ARM_ARCH_8_1M_MAIN__)
/* As ARM_CM33_NTZ (and ARM_CM55_NTZ, ARM_CM85_NTZ): PSPLIM, EXC_RETURN and r4-r11 below
 * the exception frame, and s16-s31 above them when the task's FP context is live. */
__attribute__((naked)) void xPortPendSVHandler(void)
{
    __asm volatile("mrs r0, psp\n"
                   "isb\n"
                   "ldr r3, =pxCurrentTCB\n"
                   "ldr r1, [r3]\n"
#if defined(__ARM_FP)
                   "tst lr, #0x10\n"
                   "it eq\n"
                   "vstmdbeq r0!, {s16-s31}\n"
#endif
                   "mrs r2, psplim\n"
                   "mov r3, lr\n"
                   "stmdb r0!, {r2-r11}\n"
                   "str r0, [r1]\n"
                   "bl vTaskSwitchContext\n"
                   "ldr r3, =pxCurrentTCB\n"
                   "ldr r1, [r3]\n"
                   "ldr r0, [r1]\n"
                   "ldmia r0!, {r2-r11}\n"
                   "msr psplim, r2\n"
                   "mov lr, r3\n"
#if defined(__ARM_FP)
                   "tst lr, #0x10\n"
                   "it eq\n"
                   "vldmiaeq r0!, {s16-s31}\n"
#endif
                   "msr psp, r0\n"
                   "bx lr\n");
}

__attribute__((naked)) void vPortSVCHandler(void)
{
    __asm volatile("ldr r3, =pxCurrentTCB\n"
                   "ldr r1, [r3]\n"
                   "ldr r0, [r1]\n"
                   "ldmia r0!, {r2-r11}\n"
                   "msr psplim, r2\n"
                   "msr psp, r0\n"
                   "mov lr, r3\n"
                   "bx lr\n");
}
#elif defined(__ARM_ARCH_6M__)
/* As ARM_CM0: r4-r7, then r8-r11 through the low registers, below the exception frame. */
__attribute__((naked)) void xPortPendSVHandler(void)
{
    __asm volatile("mrs r0, psp\n"
                   "ldr r3, =pxCurrentTCB\n"
                   "ldr r2, [r3]\n"
                   "sub r0, #32\n"
                   "str r0, [r2]\n"
                   "stmia r0!, {r4-r7}\n"
                   "mov r4, r8\n"
                   "mov r5, r9\n"
                   "mov r6, r10\n"
                   "mov r7, r11\n"
                   "stmia r0!, {r4-r7}\n"
                   "push {r3, r14}\n"
                   "bl vTaskSwitchContext\n"
                   "pop {r2, r3}\n"
                   "ldr r1, [r2]\n"
                   "ldr r0, [r1]\n"
                   "add r0, #16\n"
                   "ldmia r0!, {r4-r7}\n"
                   "mov r8, r4\n"
                   "mov r9, r5\n"
                   "mov r10, r6\n"
                   "mov r11, r7\n"
                   "msr psp, r0\n"
                   "sub r0, #32\n"
                   "ldmia r0!, {r4-r7}\n"
                   "bx r3\n");
}

__attribute__((naked)) void vPortSVCHandler(void)
{
    __asm volatile("ldr r3, =pxCurrentTCB\n"
                   "ldr r1, [r3]\n"
                   "ldr r0, [r1]\n"
                   "add r0, #16\n"
                   "ldmia r0!, {r4-r7}\n"
                   "mov r8, r4\n"
                   "mov r9, r5\n"
                   "mov r10, r6\n"
                   "mov r11, r7\n"
                   "msr psp, r0\n"
                   "sub r0, #32\n"
                   "ldmia r0!, {r4-r7}\n"
                   "ldr r0, =0xFFFFFFFD\n"
                   "mov lr, r0\n"
                   "bx lr\n");
}
#elif defined(MPU_PORT)
/* As ARM_CM4_MPU (with the FPU) and ARM_CM3_MPU, their v1 layout: CONTROL and r4-r11 (and
 * EXC_RETURN, then s16-s31 over them when the task's FP context is live) below the
 * exception frame. (The MPU's regions are left alone: they take nothing on the stack.) */
__attribute__((naked)) void xPortPendSVHandler(void)
{
    __asm volatile("mrs r0, psp\n"
                   "isb\n"
                   "ldr r3, =pxCurrentTCB\n"
                   "ldr r2, [r3]\n"
#if defined(__ARM_FP)
                   "tst lr, #0x10\n"
                   "it eq\n"
                   "vstmdbeq r0!, {s16-s31}\n"
                   "mrs r1, control\n"
                   "stmdb r0!, {r1, r4-r11, lr}\n"
#else
                   "mrs r1, control\n"
                   "stmdb r0!, {r1, r4-r11}\n"
#endif
                   "str r0, [r2]\n"
                   "push {r3, lr}\n"
                   "bl vTaskSwitchContext\n"
                   "pop {r3, lr}\n"
                   "ldr r1, [r3]\n"
                   "ldr r0, [r1]\n"
#if defined(__ARM_FP)
                   "ldmia r0!, {r3-r11, lr}\n"
                   "msr control, r3\n"
                   "tst lr, #0x10\n"
                   "it eq\n"
                   "vldmiaeq r0!, {s16-s31}\n"
#else
                   "ldmia r0!, {r3-r11}\n"
                   "msr control, r3\n"
#endif
                   "msr psp, r0\n"
                   "isb\n"
                   "bx lr\n");
}

__attribute__((naked)) void vPortSVCHandler(void)
{
    __asm volatile("ldr r3, =pxCurrentTCB\n"
                   "ldr r1, [r3]\n"
                   "ldr r0, [r1]\n"
#if defined(__ARM_FP)
                   "ldmia r0!, {r3-r11, lr}\n"
#else
                   "ldmia r0!, {r3-r11}\n"
                   "mov lr, #0xfffffffd\n"
#endif
                   "msr control, r3\n"
                   "msr psp, r0\n"
                   "isb\n"
                   "bx lr\n");
}
#elif defined(__ARM_FP)
__attribute__((naked)) void xPortPendSVHandler(void)
{
    __asm volatile("mrs r0, psp\n"
                   "isb\n"
                   "ldr r3, =pxCurrentTCB\n"
                   "ldr r2, [r3]\n"
                   "tst lr, #0x10\n"
                   "it eq\n"
                   "vstmdbeq r0!, {s16-s31}\n"
                   "stmdb r0!, {r4-r11, lr}\n"
                   "str r0, [r2]\n"
                   "push {r0, r3}\n"
                   "bl vTaskSwitchContext\n"
                   "pop {r0, r3}\n"
                   "ldr r1, [r3]\n"
                   "ldr r0, [r1]\n"
                   "ldmia r0!, {r4-r11, lr}\n"
                   "tst lr, #0x10\n"
                   "it eq\n"
                   "vldmiaeq r0!, {s16-s31}\n"
                   "msr psp, r0\n"
                   "isb\n"
                   "bx lr\n");
}

__attribute__((naked)) void vPortSVCHandler(void)
{
    __asm volatile("ldr r3, =pxCurrentTCB\n"
                   "ldr r1, [r3]\n"
                   "ldr r0, [r1]\n"
                   "ldmia r0!, {r4-r11, lr}\n"
                   "msr psp, r0\n"
                   "bx lr\n");
}
#else
__attribute__((naked)) void xPortPendSVHandler(void)
{
    __asm volatile("mrs r0, psp\n"
                   "ldr r3, =pxCurrentTCB\n"
                   "ldr r2, [r3]\n"
                   "stmdb r0!, {r4-r11}\n"
                   "str r0, [r2]\n"
                   "push {r3, lr}\n"
                   "bl vTaskSwitchContext\n"
                   "pop {r3, lr}\n"
                   "ldr r1, [r3]\n"
                   "ldr r0, [r1]\n"
                   "ldmia r0!, {r4-r11}\n"
                   "msr psp, r0\n"
                   "bx lr\n");
}

__attribute__((naked)) void vPortSVCHandler(void)
{
    __asm volatile("ldr r3, =pxCurrentTCB\n"
                   "ldr r1, [r3]\n"
                   "ldr r0, [r1]\n"
                   "ldmia r0!, {r4-r11}\n"
                   "msr psp, r0\n"
                   "mov lr, #0xfffffffd\n"
                   "bx lr\n");
}
#endif

__attribute__((naked, noinline)) void prvPortStartFirstTask(void)
{
    __asm volatile("ldr r0, =0xE000ED08\n"
                   "ldr r0, [r0]\n"
                   "ldr r0, [r0]\n"
                   "msr msp, r0\n"
                   "cpsie i\n"
                   "dsb\n"
                   "isb\n"
                   "svc 0\n"
                   "b .\n");
}

void vTaskStartScheduler(void)
{
    *(volatile uint32_t *)0xE000ED20u |= 0xFFu << 16; /* SHPR3: PendSV at the lowest priority */
    prvPortStartFirstTask();
}

/* As FreeRTOS counts it: the bytes at the low end of a task's stack that still hold the
 * fill, in words. */
uint32_t uxTaskGetStackHighWaterMark(TCB_t *tcb)
{
    const volatile uint8_t *byte = (const volatile uint8_t *)tcb->pxStack;
    uint32_t count = 0u;
    while (byte[count] == tskSTACK_FILL_BYTE) {
        count++;
    }
    return count / 4u;
}

void vInitialiseLists(void)
{
    for (uint32_t i = 0u; i < configMAX_PRIORITIES; i++) {
        vListInitialise(&pxReadyTasksLists[i]);
    }
    vListInitialise(&xDelayedTaskList1);
    vListInitialise(&xDelayedTaskList2);
    vListInitialise(&xSuspendedTaskList);
}
