// The gcsim command. Work in progress: see sim/cli/commands.h.
int main() { return 0; }
