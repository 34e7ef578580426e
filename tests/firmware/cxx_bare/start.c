/* Start-up of the C++ test program: copy .data, clear .bss, run the constructors, exit
 * through semihosting (newlib's rdimon) with main's result. */
#include <stdint.h>

extern uint32_t __data_load, __data_start, __data_end, __bss_start, __bss_end, __stack_top;
extern int main(void);
extern void __libc_init_array(void);
extern void exit(int);

void Reset_Handler(void) {
  uint32_t *from = &__data_load;
  for (uint32_t *to = &__data_start; to < &__data_end;) *to++ = *from++;
  for (uint32_t *to = &__bss_start; to < &__bss_end;) *to++ = 0;
  __libc_init_array();
  exit(main());
}

void Fault_Handler(void) {
  for (;;) {
  }
}

__attribute__((section(".vectors"), used)) void (*const vectors[16])(void) = {
    (void (*)(void))&__stack_top, Reset_Handler, Fault_Handler, Fault_Handler,
    Fault_Handler, Fault_Handler, Fault_Handler};

/* What -nostartfiles leaves out and the C++ runtime links against. */
void *__dso_handle = 0;
void _init(void) {}
void _fini(void) {}
int getentropy(void *buffer, unsigned length) {
  (void)buffer;
  (void)length;
  return -1;
}
