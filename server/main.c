/* draped: placeholder entry point until the daemon lands (issue 4). */
#include <stdio.h>
int main(void)
{
    fprintf(stderr, "draped: not built yet\n");
    return 1;
}
