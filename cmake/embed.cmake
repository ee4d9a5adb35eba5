# cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed.cmake: writes file's bytes as a C array
# (const unsigned char NAME[]; const size_t NAME_len), so the binary carries it.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" body "${body}")
file(WRITE ${OUT} "/* generated from ${IN} by cmake/embed.cmake */\n#include <stddef.h>\n"
     "const unsigned char ${NAME}[] = {\n${body}0x00 };\nconst size_t ${NAME}_len = ${len};\n")
