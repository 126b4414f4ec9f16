/* Unit tests for vmm/kernel_report: a panic's and an oops's headline, RIP
 * and first frames read off the console as Linux 6.12 prints them, and
 * what is not a crash report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/kernel_report.h"

static const char sysrq_panic[] =
	"[    5.123456] sysrq: Trigger a crash\r\n"
	"[    5.123789] Kernel panic - not syncing: sysrq triggered crash\r\n"
	"[    5.124000] CPU: 0 UID: 0 PID: 70 Comm: sh Not tainted 6.12.6-amd64 #1  Debian 6.12.6-1\r\n"
	"[    5.124200] Call Trace:\r\n"
	"[    5.124300]  <TASK>\r\n"
	"[    5.124400]  dump_stack_lvl+0x5d/0x80\r\n"
	"[    5.124500]  panic+0x118/0x2f0\r\n"
	"[    5.124600]  sysrq_handle_crash+0x1a/0x20\r\n"
	"[    5.124700]  __handle_sysrq.cold+0x9b/0x102\r\n"
	"[    5.124800]  write_sysrq_trigger+0x5f/0x70\r\n"
	"[    5.124900]  proc_reg_write+0x5b/0xa0\r\n"
	"[    5.125000]  ? srso_return_thunk+0x5/0x5f\r\n"
	"[    5.125100]  vfs_write+0xf5/0x420\r\n"
	"[    5.125200]  ksys_write+0x6d/0xf0\r\n"
	"[    5.125300]  do_syscall_64+0x82/0x190\r\n"
	"[    5.125400]  entry_SYSCALL_64_after_hwframe+0x76/0x7e\r\n"
	"[    5.125500] RIP: 0033:0x7f0e2b1c2240\r\n"
	"[    5.125600] RSP: 002b:00007ffd5b0f0a88 EFLAGS: 00000202\r\n"
	"[    5.126000]  </TASK>\r\n"
	"[    5.126100] Kernel Offset: disabled\r\n"
	"[    5.126200] ---[ end Kernel panic - not syncing: sysrq triggered crash ]---\r\n";

static const char null_oops[] =
	"[    3.100000] BUG: kernel NULL pointer dereference, address: 0000000000000000\n"
	"[    3.100001] #PF: supervisor write access in kernel mode\n"
	"[    3.100002] Oops: Oops: 0002 [#1] PREEMPT SMP NOPTI\n"
	"[    3.100003] CPU: 1 UID: 0 PID: 80 Comm: crasher Not tainted 6.12.6-amd64 #1\n"
	"[    3.100004] RIP: 0010:crasher_write+0x16/0x20 [crasher]\n"
	"[    3.100005] Code: 0f 1f 44 00 00 c6 04 25 00 00 00 00 01 c3\n"
	"[    3.100006] RSP: 0018:ffffb4c1c02a3e38 EFLAGS: 00010246\n"
	"[    3.100007] Call Trace:\n"
	"[    3.100008]  <TASK>\n"
	"[    3.100009]  ? __die+0x23/0x70\n"
	"[    3.100010]  ? page_fault_oops+0x17d/0x4c0\n"
	"[    3.100011]  ? crasher_write+0x16/0x20 [crasher]\n"
	"[    3.100012]  proc_reg_write+0x5b/0xa0\n"
	"[    3.100013]  vfs_write+0xf5/0x420\n"
	"[    3.100014]  </TASK>\n"
	"[    3.100015] Modules linked in: crasher\n"
	"[    3.100016] CR2: 0000000000000000\n"
	"[    3.100017] ---[ end trace 0000000000000000 ]---\n"
	"[    3.200000] Kernel panic - not syncing: Fatal exception\n"
	"[    3.200001] ---[ end Kernel panic - not syncing: Fatal exception ]---\n";

static struct kernel_report *feed(const char *text)
{
	struct kernel_report *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	for (const char *c = text; *c; c++)
		kernel_report_byte(r, (uint8_t)*c);
	return r;
}

static void test_panic(void **state)
{
	(void)state;
	struct kernel_report *r = feed(sysrq_panic);
	assert_true(r->seen);
	assert_string_equal(r->headline, "Kernel panic - not syncing: sysrq triggered crash");
	/* The user's registers in the trace are not the kernel's RIP. */
	assert_string_equal(r->rip, "");
	/* The reporting machinery and the unwinder's guesses left out. */
	assert_int_equal(r->nr_frames, KERNEL_REPORT_FRAMES);
	assert_string_equal(r->frames[0], "sysrq_handle_crash+0x1a/0x20");
	assert_string_equal(r->frames[3], "proc_reg_write+0x5b/0xa0");
	assert_string_equal(r->frames[4], "vfs_write+0xf5/0x420");
	char bt[1024];
	kernel_report_backtrace(r, bt, sizeof(bt));
	assert_string_equal(bt, "sysrq_handle_crash+0x1a/0x20 < __handle_sysrq.cold+0x9b/0x102 < "
				"write_sysrq_trigger+0x5f/0x70 < proc_reg_write+0x5b/0xa0 < "
				"vfs_write+0xf5/0x420 < ksys_write+0x6d/0xf0");
	/* The whole report, time stamps and carriage returns gone. */
	assert_non_null(strstr(r->text, "Kernel panic - not syncing: sysrq triggered crash\nCPU: 0"));
	assert_non_null(strstr(r->text, "---[ end Kernel panic"));
	assert_null(strstr(r->text, "sysrq: Trigger a crash"));
	assert_null(strchr(r->text, '\r'));
	assert_false(r->truncated);
	free(r);
}

static void test_oops_then_panic(void **state)
{
	(void)state;
	struct kernel_report *r = feed(null_oops);
	assert_string_equal(r->headline,
			    "BUG: kernel NULL pointer dereference, address: 0000000000000000");
	assert_string_equal(r->rip, "RIP: 0010:crasher_write+0x16/0x20 [crasher]");
	assert_int_equal(r->nr_frames, 2);
	assert_string_equal(r->frames[0], "proc_reg_write+0x5b/0xa0");
	assert_string_equal(r->frames[1], "vfs_write+0xf5/0x420");
	/* Both reports are in the text; the first names the crash. */
	assert_non_null(strstr(r->text, "CR2: 0000000000000000\n---[ end trace"));
	assert_non_null(strstr(r->text, "Kernel panic - not syncing: Fatal exception"));
	free(r);
}

/* Lock-ups and warnings of a slow host are not crashes; nor is a line
 * that merely mentions one. */
static void test_not_reports(void **state)
{
	(void)state;
	struct kernel_report *r = feed(
		"[   22.0] watchdog: BUG: soft lockup - CPU#0 stuck for 23s! [sh:1]\n"
		"[   23.0] BUG: workqueue lockup - pool cpus=0 node=0 flags=0x0 nice=0 stuck for 31s!\n"
		"[   24.0] WARNING: CPU: 0 PID: 1 at mm/foo.c:1 bar+0x1/0x2\n"
		"grep 'Oops: ' found nothing\n"
		"Call Trace:\n"
		" fake_frame+0x1/0x2\n");
	assert_false(r->seen);
	assert_int_equal(r->nr_frames, 0);
	assert_int_equal(r->text_len, 0);
	free(r);
}

/* A report longer than the cap is cut, says so, and stays a string;
 * a line longer than the line buffer keeps its head. */
static void test_caps(void **state)
{
	(void)state;
	struct kernel_report *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	const char *start = "general protection fault, probably for non-canonical address\n";
	for (const char *c = start; *c; c++)
		kernel_report_byte(r, (uint8_t)*c);
	for (int i = 0; i < 5000; i++)
		for (int j = 0; j < 100; j++)
			kernel_report_byte(r, j == 99 ? '\n' : 'x');
	for (int i = 0; i < 1000; i++)
		kernel_report_byte(r, 'y');
	kernel_report_byte(r, '\n');
	assert_true(r->seen);
	assert_true(r->truncated);
	assert_true(r->text_len < KERNEL_REPORT_TEXT_MAX);
	assert_int_equal(strlen(r->text), r->text_len);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_panic),
		cmocka_unit_test(test_oops_then_panic),
		cmocka_unit_test(test_not_reports),
		cmocka_unit_test(test_caps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
