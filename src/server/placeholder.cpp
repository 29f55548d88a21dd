// Keeps the library non-empty until the first source file lands.
