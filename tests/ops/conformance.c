#include "perceive.h"
int main(void) { return 0; }
