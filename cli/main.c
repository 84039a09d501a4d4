#include <stdio.h>

int main(void)
{
    puts("erode " ERODE_VERSION);
    return 0;
}
