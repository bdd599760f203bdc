/* main.c: placeholder until the runtime lands. */
#include "carpenter/log.h"

int main(void)
{
  CARP_LOG_INFO("main", "starting");
  return 0;
}
