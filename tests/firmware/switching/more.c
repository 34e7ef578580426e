/* A task of another file, whose static helper has the name of one in app.c: reports and
 * hints tell them apart by file (more.c:work, app.c:work). */
#include <stdint.h>

uint32_t xTaskCreate(void (*code)(void *), const char *name, uint16_t words, void *parameters,
                     uint32_t priority, void **created);
void taskYIELD(void);

extern volatile uint32_t sink;

__attribute__((noinline)) static void work(uint32_t n)
{
    volatile uint8_t frame[160];
    frame[n % sizeof frame] = (uint8_t)n;
    sink += frame[3];
    taskYIELD();
}

void vOtherTask(void *argument)
{
    (void)argument;
    for (uint32_t n = 0u;; n++) {
        work(n);
    }
}

void vStartOtherTask(void)
{
    xTaskCreate(vOtherTask, "Other", 96u, 0, 1u, 0);
#if defined(NAMED_AT_RUN_TIME) || defined(SHARED_NAME)
    xTaskCreate(vOtherTask, "Worker 1", 80u, 0, 1u, 0); /* a name app.c's task has too */
#endif
}

#if defined(MPU_PORT)
/* What FreeRTOS's MPU ports define: their task control blocks start with MPU settings, and
 * with the v2 wrappers each task has a system-call stack of configSYSTEM_CALL_STACK_SIZE
 * words, on which the system calls' MPU_...Impl functions run. */
void vPortStoreTaskMPUSettings(void) {}

typedef struct SYSTEM_CALL_STACK_INFO {
    uint32_t ulSystemCallStackBuffer[64];
    uint32_t *pulSystemCallStack;
} xSYSTEM_CALL_STACK_INFO;
xSYSTEM_CALL_STACK_INFO xSystemCallStackInfo;

__attribute__((noinline)) void MPU_vTaskDelayImpl(uint32_t ticks)
{
    volatile uint8_t frame[120];
    frame[ticks % sizeof frame] = 1u;
    sink += frame[2];
}
#endif
