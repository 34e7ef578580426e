/* Vector table and reset handler of the test firmware: the user's own, not memplace's. */
#include <stdint.h>

extern uint32_t __stack_top;
int main(void);
void SysTick_Handler(void);
void TIMER0_Handler(void);

void Reset_Handler(void)
{
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
    [2 ... 14] = Default_Handler,
    [15] = SysTick_Handler,
    [16 ... 23] = Default_Handler,
    [16 + 8] = TIMER0_Handler,
};
