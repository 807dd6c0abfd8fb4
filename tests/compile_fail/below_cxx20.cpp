// Compiled below C++20, tower stops at one clear #error instead of thousands of lines.
// flags: -std=c++17
// expect: tower requires C++20: compile with -std=c++20
// expect-clang: tower requires C++20: compile with -std=c++20
#include <tower/tower.hpp>

int main() { return 0; }
