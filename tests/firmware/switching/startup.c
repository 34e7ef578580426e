/* Vector table and reset handler: the test firmware's own. .data is copied and .bss zeroed
 * by the reset handler; the main stack is at the top of RAM. */
#include <stdint.h>

extern uint32_t __stack_top, __data_load, __data_start, __data_end, __bss_start, __bss_end;
int main(void);
void xPortPendSVHandler(void);
void vPortSVCHandler(void);
void xPortSysTickHandler(void);
void TIMER0_Handler(void);

void Reset_Handler(void)
{
#if defined(__ARM_FP)
    *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20; /* CPACR: the FPU on */
    __asm volatile("dsb\nisb");
#endif
    uint32_t *from = &__data_load;
    for (uint32_t *to = &__data_start; to < &__data_end;) {
        *to++ = *from++;
    }
    for (uint32_t *to = &__bss_start; to < &__bss_end;) {
        *to++ = 0u;
    }
    main();
    for (;;) {
    }
}

void Default_Handler(void)
{
    for (;;) {
    }
}

__attribute__((section(".vectors"), used)) void (*const vectors[16 + 9])(void) = {
    [0] = (void (*)(void))&__stack_top,
    [1] = Reset_Handler,
    [2 ... 10] = Default_Handler,
    [11] = vPortSVCHandler,
    [12 ... 13] = Default_Handler,
    [14] = xPortPendSVHandler,
    [15] = xPortSysTickHandler,
    [16 ... 23] = Default_Handler,
    [16 + 8] = TIMER0_Handler, /* the CMSDK timer 0 of the MPS2: device interrupt 8 */
};
