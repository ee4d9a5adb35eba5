#include "perceive.h"
#include <stdio.h>
int main(void) { printf("perceive %s\n", PV_VERSION); return 0; }
